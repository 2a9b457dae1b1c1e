package draincmd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/herald-lb/herald/api/generated/clientset/versioned"
	"github.com/herald-lb/herald/api/v1beta1"
	"github.com/herald-lb/herald/internal/installation"
)

// Options are one drain or undrain.
type Options struct {
	Kube   kubernetes.Interface
	Herald versioned.Interface
	Node   string
	// Undo removes the drain label instead.
	Undo bool
	// Timeout bounds the wait; the label stays when it runs out.
	Timeout time.Duration
	// Poll is how often the SpeakerStatuses are read while waiting.
	Poll time.Duration
	Out  io.Writer
}

// ErrTimeout is returned when the node still announces something when
// the timeout runs out.
var ErrTimeout = errors.New("the node still announces addresses")

// Run labels (or unlabels) the node and, draining, waits.
func Run(ctx context.Context, o Options) error {
	if o.Undo {
		if err := setLabel(ctx, o.Kube, o.Node, nil); err != nil {
			return err
		}
		fmt.Fprintf(o.Out, "node %s: label %s removed; Herald may announce from it again\n", o.Node, v1beta1.LabelDrain)
		return nil
	}
	before, err := readAll(ctx, o.Herald)
	if err != nil {
		return err
	}
	v := "true"
	if err := setLabel(ctx, o.Kube, o.Node, &v); err != nil {
		return err
	}
	fmt.Fprintf(o.Out, "node %s: labelled %s=true; waiting until it announces nothing (timeout %s)\n", o.Node, v1beta1.LabelDrain, o.Timeout)
	return wait(ctx, o, before.of(o.Node))
}

// setLabel sets the drain label to *v, or removes it when v is nil, with
// a merge patch (no read-modify-write race with the kubelet).
func setLabel(ctx context.Context, kube kubernetes.Interface, node string, v *string) error {
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"labels": map[string]any{v1beta1.LabelDrain: v}}})
	if err != nil {
		return err
	}
	if _, err := kube.CoreV1().Nodes().Patch(ctx, node, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: "kubectl-herald"}); err != nil {
		if apierrors.IsNotFound(err) {
			return fmt.Errorf("node %s: no such node", node)
		}
		return fmt.Errorf("node %s: label %s: %w", node, v1beta1.LabelDrain, err)
	}
	return nil
}

// wait polls until every SpeakerStatus of the node says draining and
// lists nothing, printing each address as it leaves the node and who
// announces it then. An address that left while no other node reports it
// yet is printed once one does, or, when the node is drained, after
// settlePolls more polls without one.
func wait(ctx context.Context, o Options, had []Address) error {
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	left := map[Address]bool{}
	var untaken []Address
	settle := settlePolls
	t := time.NewTicker(o.Poll)
	defer t.Stop()
	for {
		now, err := readAll(ctx, o.Herald)
		if err != nil && ctx.Err() == nil {
			return err
		}
		if err == nil {
			for _, a := range had {
				if !left[a] && !now.announces(o.Node, a) {
					left[a] = true
					untaken = append(untaken, a)
				}
			}
			untaken = printTaken(o, now, untaken)
			if now.drained(o.Node) {
				if len(untaken) == 0 || settle == 0 {
					for _, a := range untaken {
						fmt.Fprintf(o.Out, "%s (%s) left %s: %s\n", a.IP, a.How, o.Node, where(nil))
					}
					fmt.Fprintf(o.Out, "node %s announces nothing: run kubectl drain %s now\n", o.Node, o.Node)
					return nil
				}
				settle--
			}
		}
		select {
		case <-ctx.Done():
			if ctx.Err() == context.DeadlineExceeded {
				return fmt.Errorf("node %s after %s: %w: %s (is its speaker running? kubectl herald status node %s)",
					o.Node, o.Timeout, ErrTimeout, strings.Join(now.list(o.Node), ", "), o.Node)
			}
			return ctx.Err()
		case <-t.C:
		}
	}
}

// settlePolls is how many polls a drained node's command waits for the
// nodes that took its addresses to report them: every speaker writes its
// SpeakerStatus at most once per --status-interval (1 s), so the old
// owner's may say an address left before the new owner's says it came.
const settlePolls = 3

// printTaken prints the addresses of untaken that another node
// announces now, and returns the others.
func printTaken(o Options, now report, untaken []Address) []Address {
	var rest []Address
	for _, a := range untaken {
		by := now.by(a, o.Node)
		if len(by) == 0 {
			rest = append(rest, a)
			continue
		}
		fmt.Fprintf(o.Out, "%s (%s) left %s: %s\n", a.IP, a.How, o.Node, where(by))
	}
	return rest
}

func where(nodes []string) string {
	if len(nodes) == 0 {
		return "no other node announces it"
	}
	return "now announced by " + strings.Join(nodes, ", ")
}

// Address is one address a node announces, and how ("l2" or "bgp").
type Address struct {
	IP, How string
}

// report is what every node's speakers report, by node.
type report struct {
	announced map[string]map[Address]bool
	// draining lists, per node, whether each of its SpeakerStatuses
	// (one per installation) says draining.
	draining map[string][]bool
}

func readAll(ctx context.Context, h versioned.Interface) (report, error) {
	r := report{announced: map[string]map[Address]bool{}, draining: map[string][]bool{}}
	l, err := h.HeraldV1beta1().SpeakerStatuses().List(ctx, metav1.ListOptions{})
	if err != nil {
		return r, fmt.Errorf("list SpeakerStatuses: %w", err)
	}
	for i := range l.Items {
		ss := &l.Items[i]
		node := nodeOf(ss)
		r.draining[node] = append(r.draining[node], ss.Status.Draining)
		if r.announced[node] == nil {
			r.announced[node] = map[Address]bool{}
		}
		for _, a := range Announced(ss.Status) {
			r.announced[node][a] = true
		}
	}
	return r, nil
}

// Announced lists what one SpeakerStatus reports: its L2 addresses and the
// prefixes of its established sessions.
func Announced(st v1beta1.SpeakerStatusStatus) []Address {
	var out []Address
	for _, a := range st.L2 {
		out = append(out, Address{IP: a.Address, How: "l2"})
	}
	for _, b := range st.BGP {
		for _, p := range b.Prefixes {
			out = append(out, Address{IP: p, How: "bgp"})
		}
	}
	if st.Summary.L2Addresses > int32(len(st.L2)) || st.Truncated {
		out = append(out, Address{IP: "(more, the status is truncated)", How: "l2"})
	}
	return out
}

func nodeOf(ss *v1beta1.SpeakerStatus) string {
	inst, ok := ss.Labels[v1beta1.LabelInstallation]
	if !ok {
		return ss.Name
	}
	if n, ok := installation.Name(inst).Node(ss.Name); ok {
		return n
	}
	return ss.Name
}

func (r report) of(node string) []Address {
	var out []Address
	for a := range r.announced[node] {
		out = append(out, a)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].IP != out[j].IP {
			return out[i].IP < out[j].IP
		}
		return out[i].How < out[j].How
	})
	return out
}

func (r report) announces(node string, a Address) bool { return r.announced[node][a] }

// by lists the other nodes announcing a, sorted.
func (r report) by(a Address, except string) []string {
	var out []string
	for n, as := range r.announced {
		if n != except && as[a] {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

// drained: every SpeakerStatus of the node says draining (its speakers saw
// the label) and none lists anything. A node with no SpeakerStatus has no
// running speaker of any installation, and announces nothing.
func (r report) drained(node string) bool {
	for _, d := range r.draining[node] {
		if !d {
			return false
		}
	}
	return len(r.announced[node]) == 0
}

func (r report) list(node string) []string {
	var out []string
	for _, a := range r.of(node) {
		out = append(out, a.IP+" ("+a.How+")")
	}
	if len(out) == 0 {
		out = append(out, "its speaker has not reported the drain yet")
	}
	return out
}
