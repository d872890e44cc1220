package main

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"

	"github.com/o2ims-operator/o2ims-operator/tests/stack"
)

// The control of section 8 (issue 39): the peer once more, carrying on each request the annotations the
// operator keeps for kopf (the managed marker and the diff-base under kopf's two keys, tests/bench/peer/
// kopf.go), written with its finalizer. At deletion its requests are then the operator's size, so what
// is left between it and the operator is the code. It runs in the primary configuration only, in each
// round (the first after the peer, the second first of all).

// controlFlag makes the peer the control.
const controlFlag = "--kopf-annotations"

// objectSize is one handled request as the API server returns it, before the deletion.
type objectSize struct {
	Bytes, ManagedFields int
}

func (o objectSize) String() string {
	if o.Bytes == 0 {
		return "not measured"
	}
	return fmt.Sprintf("%d B (managedFields %d B)", o.Bytes, o.ManagedFields)
}

// requestSize reads one request from the API server (the middle one of a run: neither the first nor the
// last handled) and measures its JSON.
func requestSize(ctx context.Context, dyn dynamic.Interface, name string) objectSize {
	u, err := dyn.Resource(prGVR).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return objectSize{}
	}
	whole, err1 := json.Marshal(u.Object)
	managed, err2 := json.Marshal(u.GetManagedFields())
	if err1 != nil || err2 != nil {
		return objectSize{}
	}
	return objectSize{Bytes: len(whole), ManagedFields: len(managed)}
}

// runControl measures the control in a configuration whose peer was measured; a failure is kept as its
// note, as the peer's is.
func runControl(ctx context.Context, c *config, st *stack.Stack, cr *configRun, pb peerBuild, run string) {
	if pb.err != nil || cr.PeerErr != "" {
		return
	}
	say(c, "8. %s: the peer carrying the operator's kopf annotations (control)", cr.Config)
	got, err := measurePeer(ctx, st, pb, run+"control", append(cr.Config.Limits.flags(), controlFlag), c.n)
	if err != nil {
		say(c, "   control: %v", err)
		if cr.Control != nil { // a later round: its note says so, as the contenders' do
			cr.Control.Note = strings.TrimPrefix(cr.Control.Note+"; a later round failed: "+err.Error(), "; ")
			return
		}
		cr.ControlErr = err.Error()
		return
	}
	got.Name = "the peer with kopf's annotations"
	say(c, "   %s", got.line())
	if cr.Control == nil {
		cr.Control = &got
		return
	}
	cr.Control.addRound(got)
}

// measurePeer starts the peer with args and measures it once at the configuration's size.
func measurePeer(ctx context.Context, st *stack.Stack, pb peerBuild, run string, args []string, n int) (contenderRun, error) {
	peer, err := startPeer(ctx, st, pb.bin, run, args)
	if err != nil {
		return contenderRun{}, err
	}
	got, err := measureContender(ctx, st, peer, run, n, nil)
	if err != nil {
		return got, fmt.Errorf("%w; %s", err, firstErrors(filepath.Join(st.Dir, "peer.log"), 3))
	}
	return got, nil
}

// controlTable is the control beside both contenders, primary configuration.
func (r *report) controlTable(p printer) {
	sb := r.SideBySide
	if sb.Control == nil {
		if sb.ControlErr != "" {
			p("\nThe control (the peer carrying the operator's kopf annotations) was not measured: %s\n", sb.ControlErr)
		}
		return
	}
	ctl := *sb.Control
	p("\n**What deleting costs: the control.** The operator keeps on every request it handled what kopf keeps " +
		"(docs/upgrading.md): `kopf-managed` and the diff-base — the spec and labels last handled — under kopf's two keys, " +
		"which the Python image reads back after a rollback. The peer keeps none of it. The control is the same peer " +
		"writing those three annotations, byte for byte as the operator does for these requests (tests/bench/peer/kopf.go), with its " +
		"finalizer; at deletion its requests are then the operator's size, and what is left between the two is the code. " +
		"It runs in this configuration only, in each round (after the peer in the first, first of all in the second). " +
		"It writes them with its first write where the operator writes them with its last, so its requests are larger " +
		"throughout the load too: its fulfilled/s is a lower bound, its deleted/s the comparison.\n\n")
	p("| | o2ims-operator | controller-runtime peer | the peer with kopf's annotations (control) |\n|---|--:|--:|--:|\n")
	row := func(what string, f func(contenderRun) string) {
		p("| %s | %s | %s | %s |\n", what, f(sb.Ours), sb.peerOr(f), f(ctl))
	}
	row("a request before the deletion, as the API server returns it", func(c contenderRun) string { return c.Object.String() })
	row("delete: bytes per watch event of a request", func(c contenderRun) string {
		return fmt.Sprintf("%.0f B", c.DelCalls.watchEventBytes("provisioningrequests"))
	})
	for _, call := range []string{"provisioningrequests PATCH", "packagevariants DELETE", "provisioningrequests DELETE"} {
		row("delete: the API server's answer time, "+call, func(c contenderRun) string {
			return fmt.Sprintf("%.1f ms", float64(c.DelCalls.Served[call].Mean().Microseconds())/1000)
		})
	}
	row("delete: worker time per request (all its passes)", func(c contenderRun) string { return secs(c.DelWaits.Work.Sum / float64(max(c.Deleted, 1))) })
	row("CPU per deleted request: contender / kube-apiserver (core-ms)", func(c contenderRun) string { return cpuMs(c.cpuPerDeleted) })
	row("**deleted/s**, the mean (each round)", func(c contenderRun) string { return fmt.Sprintf("**%.1f**%s", c.DelRate, roundsOf(c.DelRounds)) })
	row("fulfilled/s, the mean (each round)", func(c contenderRun) string { return fmt.Sprintf("%.1f%s", c.Rate, roundsOf(c.Rounds)) })
	row("note", func(c contenderRun) string { return c.Note })
}

// controlSummary is the Summary's row of the control: no target of its own, what the delete gap is.
func (r *report) controlSummary(p printer) {
	sb := r.SideBySide
	if sb.Control == nil || sb.PeerErr != "" {
		return
	}
	o, pe, ctl := sb.Ours, sb.Peer, *sb.Control
	p("| deleted/s against the peer carrying the annotations the operator keeps for kopf (the control; no target: what the delete gap is made of) (%s) | ours %.1f/s, the control %.1f/s (%.2f×); the peer without them %.1f/s | – |\n",
		sb.Config, o.DelRate, ctl.DelRate, o.DelRate/max(ctl.DelRate, 0.001), pe.DelRate)
}
