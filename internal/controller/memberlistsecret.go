package controller

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	"github.com/herald-lb/herald/api/v1beta1"
	"github.com/herald-lb/herald/internal/k8s"
)

// memberlistRecheck is how often a healthy member-list Secret is read
// again besides its watch.
const memberlistRecheck = time.Minute

// ReasonMemberlistKeyMissing: the member-list Secret holds no key while
// speakers run with one this controller never saw (Warning Event on the
// Secret).
const ReasonMemberlistKeyMissing = "MemberlistKeyMissing"

// MemberlistKeeper keeps the speakers' member-list Secret, and never
// replaces the key while speakers use it:
//
//   - a Secret deleted, or emptied, while this replica runs comes back with
//     the key this replica last saw in it (the key the speakers hold);
//   - with no Secret and no key seen, a new random key is created only when
//     no speaker runs with a key (no fresh liveness Lease carries
//     v1beta1.AnnotationMemberlistKeys): a fresh install. Otherwise a new
//     key would split the member list at every speaker restart, so the
//     replica reports it (an error log, a Warning Event on the Secret,
//     herald_controller_memberlist_key_missing 1) and waits for the
//     operator to create the Secret (docs/security.md).
//
// Every controller replica runs it, leader or not, so that applying the
// manifests alone is a complete install even while no replica leads, and
// a replica that remembers the key outlives the Secret's deletion.
// Writing the Secret needs no lease: every replica writes the same thing,
// and a create that loses the race finds the winner's Secret.
type MemberlistKeeper struct {
	Kube      kubernetes.Interface
	Namespace string
	// Name of the Secret; empty: Run returns at once.
	Name       string
	Log        *slog.Logger
	Recorder   record.EventRecorder  // nil: no Events
	Registerer prometheus.Registerer // nil: the metric is not registered
	Now        func() time.Time      // nil: time.Now

	mu    sync.Mutex
	known []byte // the key last seen in the Secret
}

// memberlistPlan is what the keeper does about the Secret.
type memberlistPlan int

const (
	// memberlistKeep: the Secret holds a key; remember it.
	memberlistKeep memberlistPlan = iota
	// memberlistRestore: write the remembered key back (create the
	// Secret, or repair it when it exists without a key).
	memberlistRestore
	// memberlistNewKey: no key anywhere and no speaker holds one: write
	// a new random key.
	memberlistNewKey
	// memberlistWait: speakers run with a key this replica never saw:
	// invent none, report, wait for the operator.
	memberlistWait
)

// planMemberlist decides from the Secret's key (nil: missing or empty),
// the key this replica remembers (nil: none) and the number of live
// speakers that run with a key.
func planMemberlist(current, known []byte, speakersWithKey int) memberlistPlan {
	switch {
	case len(current) > 0:
		return memberlistKeep
	case len(known) > 0:
		return memberlistRestore
	case speakersWithKey == 0:
		return memberlistNewKey
	default:
		return memberlistWait
	}
}

// errWaitingForOperator: memberlistWait; retried with backoff, so that
// the Secret the operator creates, or the last speaker going, is seen.
var errWaitingForOperator = errors.New("waiting for the operator")

// Run keeps the Secret until ctx ends: at start, at every change the watch
// of the Secret reports, every minute, and with exponential backoff
// (1 s to 1 min) after a failure.
func (k *MemberlistKeeper) Run(ctx context.Context) {
	if k.Name == "" {
		return
	}
	if k.Now == nil {
		k.Now = time.Now
	}
	missing := prometheus.NewGauge(prometheus.GaugeOpts{Namespace: "herald", Subsystem: "controller", Name: "memberlist_key_missing",
		Help: "1 while the speakers' member-list Secret holds no key and speakers run with one this replica never saw: it invents none (a new key would split the member list) and waits for the operator to create the Secret (docs/security.md)."})
	if k.Registerer != nil {
		var err error
		if missing, err = registerOrReuse(k.Registerer, missing); err != nil {
			k.Log.Warn("member-list key metric not registered", "error", err)
		}
	}
	poke := k.watch(ctx)
	newBackoff := func() wait.Backoff {
		return wait.Backoff{Duration: time.Second, Factor: 2, Jitter: 0.1, Steps: 1 << 30, Cap: time.Minute}
	}
	backoff := newBackoff()
	reported := false
	for {
		next := memberlistRecheck
		err := k.ensure(ctx)
		waiting := errors.Is(err, errWaitingForOperator)
		missing.Set(boolGauge(waiting))
		switch {
		case ctx.Err() != nil:
			return
		case waiting:
			next = backoff.Step()
			if !reported {
				k.report(err)
			}
		case err != nil:
			next = backoff.Step()
			k.Log.Warn("member-list Secret; retrying", "secret", k.ref(), "in", next.Round(time.Millisecond), "error", err)
		default:
			backoff = newBackoff()
		}
		reported = waiting
		select {
		case <-ctx.Done():
			return
		case <-poke:
		case <-time.After(next):
		}
	}
}

func boolGauge(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// registerOrReuse registers c, or returns the collector already
// registered under its name (a second keeper in the same process).
func registerOrReuse(reg prometheus.Registerer, c prometheus.Gauge) (prometheus.Gauge, error) {
	err := reg.Register(c)
	var already prometheus.AlreadyRegisteredError
	if errors.As(err, &already) {
		if g, ok := already.ExistingCollector.(prometheus.Gauge); ok {
			return g, nil
		}
	}
	return c, err
}

// watch follows the one Secret, remembers every key it shows and returns
// a channel that receives when it changed or went.
func (k *MemberlistKeeper) watch(ctx context.Context) <-chan struct{} {
	poke := make(chan struct{}, 1)
	signal := func(obj any) {
		if s, ok := obj.(*corev1.Secret); ok {
			k.remember(s.Data[v1beta1.MemberlistSecretKey])
		}
		select {
		case poke <- struct{}{}:
		default:
		}
	}
	factory := informers.NewSharedInformerFactoryWithOptions(k.Kube, 0, informers.WithNamespace(k.Namespace),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.FieldSelector = "metadata.name=" + k.Name }))
	_, err := factory.Core().V1().Secrets().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    signal,
		UpdateFunc: func(_, obj any) { signal(obj) },
		DeleteFunc: func(any) { signal(nil) },
	})
	if err != nil {
		k.Log.Warn("member-list Secret not watched; read every minute only", "secret", k.ref(), "error", err)
		return poke
	}
	factory.Start(ctx.Done())
	go func() {
		<-ctx.Done()
		factory.Shutdown()
	}()
	return poke
}

// remember keeps a non-empty key as the one the speakers hold.
func (k *MemberlistKeeper) remember(key []byte) {
	if len(key) == 0 {
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if !bytes.Equal(k.known, key) {
		k.known = bytes.Clone(key)
	}
}

func (k *MemberlistKeeper) knownKey() []byte {
	k.mu.Lock()
	defer k.mu.Unlock()
	return bytes.Clone(k.known)
}

func (k *MemberlistKeeper) ref() string { return k.Namespace + "/" + k.Name }

// ensure reads the Secret and acts on planMemberlist.
func (k *MemberlistKeeper) ensure(ctx context.Context) error {
	secrets := k.Kube.CoreV1().Secrets(k.Namespace)
	cur, err := secrets.Get(ctx, k.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		cur = nil
	case err != nil:
		return fmt.Errorf("reading the member-list Secret %s: %w", k.ref(), err)
	}
	var current []byte
	if cur != nil {
		current = cur.Data[v1beta1.MemberlistSecretKey]
	}
	known := k.knownKey()
	holders := 0
	if len(current) == 0 && len(known) == 0 {
		if holders, err = k.speakersWithKey(ctx); err != nil {
			return err
		}
	}
	var key []byte
	switch planMemberlist(current, known, holders) {
	case memberlistKeep:
		k.remember(current)
		return nil
	case memberlistWait:
		return fmt.Errorf("%w: %d live speaker(s) run with a member-list key and the Secret %s holds none", errWaitingForOperator, holders, k.ref())
	case memberlistRestore:
		key = known
	case memberlistNewKey:
		if key, err = newMemberlistKey(); err != nil {
			return err
		}
	}
	if err := k.write(ctx, cur, key); err != nil {
		return err
	}
	k.remember(key)
	if bytes.Equal(key, known) {
		k.Log.Info("wrote the member-list key the speakers hold back into its Secret", "secret", k.ref())
	} else {
		k.Log.Info("created the speakers' member-list Secret with a random key (no speaker runs with a key)", "secret", k.ref())
	}
	return nil
}

// write creates the Secret with key, or puts key into cur when it exists.
func (k *MemberlistKeeper) write(ctx context.Context, cur *corev1.Secret, key []byte) error {
	secrets := k.Kube.CoreV1().Secrets(k.Namespace)
	if cur != nil {
		cur = cur.DeepCopy()
		if cur.Data == nil {
			cur.Data = map[string][]byte{}
		}
		cur.Data[v1beta1.MemberlistSecretKey] = key
		if _, err := secrets.Update(ctx, cur, metav1.UpdateOptions{FieldManager: FieldManager}); err != nil {
			return fmt.Errorf("repairing the member-list Secret %s (its key was missing): %w", k.ref(), err)
		}
		return nil
	}
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: k.Name, Namespace: k.Namespace,
			Labels: map[string]string{"app.kubernetes.io/name": "herald", "app.kubernetes.io/component": "speaker"}},
		Data: map[string][]byte{v1beta1.MemberlistSecretKey: key},
	}
	_, err := secrets.Create(ctx, secret, metav1.CreateOptions{FieldManager: FieldManager})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating the member-list Secret %s: %w", k.ref(), err)
	}
	return nil
}

// speakersWithKey counts the speakers whose liveness Lease is fresh and
// names the keys they run with.
func (k *MemberlistKeeper) speakersWithKey(ctx context.Context) (int, error) {
	list, err := k.Kube.CoordinationV1().Leases(k.Namespace).List(ctx, metav1.ListOptions{LabelSelector: v1beta1.LabelSpeakerLiveness + "=true"})
	if err != nil {
		return 0, fmt.Errorf("listing the speakers' liveness Leases (does a speaker run with a member-list key?): %w", err)
	}
	n, now := 0, k.Now()
	for i := range list.Items {
		l := &list.Items[i]
		if k8s.LeaseFresh(l, now) && len(v1beta1.ParseMemberlistKeys(l.Annotations[v1beta1.AnnotationMemberlistKeys])) > 0 {
			n++
		}
	}
	return n, nil
}

// report says loudly, once per episode, that the key is missing while
// speakers hold one.
func (k *MemberlistKeeper) report(err error) {
	msg := fmt.Sprintf("%v: a new key would split the member list at every speaker restart, so none is created; "+
		"create the Secret (docs/security.md, the member-list Secret), or let the last speaker stop", err)
	k.Log.Error(msg, "secret", k.ref())
	if k.Recorder != nil {
		ref := &corev1.ObjectReference{APIVersion: "v1", Kind: "Secret", Namespace: k.Namespace, Name: k.Name}
		k.Recorder.Event(ref, corev1.EventTypeWarning, ReasonMemberlistKeyMissing, msg)
	}
}

// newMemberlistKey is 32 random bytes (AES-256) in base64.
func newMemberlistKey() ([]byte, error) {
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		return nil, err
	}
	return []byte(base64.StdEncoding.EncodeToString(raw)), nil
}
