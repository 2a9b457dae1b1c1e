package speaker

import (
	"context"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/herald-lb/herald/api/v1beta1"
	"github.com/herald-lb/herald/internal/k8s/lean"
)

// DefaultStatusInterval is the least time between two writes of a node's
// SpeakerStatus: changes within it are coalesced into one write.
const DefaultStatusInterval = time.Second

// statusPublisher writes this node's SpeakerStatus (named after the node,
// owned by its Node so that it goes with it) when what the node announces
// changed, at most once per interval. It writes only a difference from
// what it last wrote: nothing when the content is unchanged, no
// heartbeat. A Get (or a Create) happens only at start, after a failed
// write, and after the object was deleted (forget).
type statusPublisher struct {
	client   lean.SpeakerStatusClient
	node     string            // the Node, its owner
	name     string            // the object's (installation.Name.SpeakerStatus)
	labels   map[string]string // its installation's (installation.Name.Labels)
	manager  string            // the field manager of the writes
	interval time.Duration
	now      func() time.Time
	onWrite  func() // counts the writes (metric)

	mu        sync.Mutex
	last      *v1beta1.SpeakerStatus // as the API server has it after our last write; nil: unknown
	lastWrite time.Time
}

// publish writes want unless it is what the server already has. It
// returns how long to wait when the last write was less than an interval
// ago (nothing written then); force skips that wait (at shutdown).
func (p *statusPublisher) publish(ctx context.Context, want v1beta1.SpeakerStatusStatus, nodeUID types.UID, force bool) (time.Duration, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.last == nil {
		got, err := p.client.Get(ctx, p.name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			return 0, fmt.Errorf("get SpeakerStatus %s: %w", p.name, err)
		default:
			p.last = got
		}
	}
	if p.last != nil && equality.Semantic.DeepEqual(p.last.Status, want) && ownedBy(p.last, nodeUID) {
		return 0, nil
	}
	if wait := p.lastWrite.Add(p.interval).Sub(p.now()); wait > 0 && !force {
		return wait, nil
	}
	owner := metav1.OwnerReference{APIVersion: "v1", Kind: "Node", Name: p.node, UID: nodeUID}
	var (
		written *v1beta1.SpeakerStatus
		err     error
	)
	if p.last == nil {
		obj := &v1beta1.SpeakerStatus{ObjectMeta: metav1.ObjectMeta{Name: p.name, Labels: p.labels, OwnerReferences: []metav1.OwnerReference{owner}}, Status: want}
		written, err = p.client.Create(ctx, obj, metav1.CreateOptions{FieldManager: p.manager})
	} else {
		obj := p.last.DeepCopy()
		obj.Status = want
		obj.OwnerReferences = []metav1.OwnerReference{owner}
		written, err = p.client.Update(ctx, obj, metav1.UpdateOptions{FieldManager: p.manager})
	}
	p.lastWrite = p.now()
	if err != nil {
		p.last = nil // read it again: it changed, or was deleted or created under us
		return 0, fmt.Errorf("write SpeakerStatus %s: %w", p.name, err)
	}
	p.last = written
	if p.onWrite != nil {
		p.onWrite()
	}
	return 0, nil
}

// forget makes the next publish read the object again (it was deleted).
func (p *statusPublisher) forget() {
	p.mu.Lock()
	p.last = nil
	p.mu.Unlock()
}

func ownedBy(s *v1beta1.SpeakerStatus, uid types.UID) bool {
	return len(s.OwnerReferences) == 1 && s.OwnerReferences[0].Kind == "Node" && s.OwnerReferences[0].UID == uid
}
