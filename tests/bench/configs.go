package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/o2ims-operator/o2ims-operator/framework"
	"github.com/o2ims-operator/o2ims-operator/tests/kubeapi"
	"github.com/o2ims-operator/o2ims-operator/tests/sim/world"
	"github.com/o2ims-operator/o2ims-operator/tests/stack"
)

// worldStep is how often the side-by-side section's world moves in its primary configuration: Porch
// renders 0.3 s after a PackageVariant appears, and a Cluster is Pending, Provisioning 0.3 s later and
// provisioned 0.3 s after.
const worldStep = 300 * time.Millisecond

// sideWorlds are the world's paces the section runs at (issue 39: at 300 ms and at 0 ms). The world's
// delays are fixed when it starts, so each pace has a stack of its own, its own ceiling first.
var sideWorlds = []time.Duration{worldStep, 0}

// limits are the client-side limits both contenders run with in a configuration. Both read
// --kube-api-qps/--kube-api-burst as one token bucket per API resource (the operator's per-resource REST
// clients, framework/clientlimits.go; controller-runtime's per-kind REST clients), Events in another.
type limits struct {
	Key   string // in run names
	QPS   float64
	Burst int
	// Shipped: the operator runs without the flags, at its defaults; the peer is given the same numbers
	// (controller-runtime's own config has no client-side limit, client-go's is 5/10).
	Shipped bool
}

var (
	limitsQPS100  = limits{Key: "q100", QPS: 100, Burst: 200}
	limitsShipped = limits{Key: "shipped", QPS: framework.DefaultQPS, Burst: framework.DefaultBurst, Shipped: true}
	// sideLimits are the limits the section runs at, at each pace of the world.
	sideLimits = []limits{limitsQPS100, limitsShipped}
)

// flags are the limits as both contenders' flags.
func (l limits) flags() []string {
	return []string{fmt.Sprintf("--kube-api-qps=%g", l.QPS), fmt.Sprintf("--kube-api-burst=%d", l.Burst)}
}

// oursArgs are the operator's arguments: none at the shipped defaults.
func (l limits) oursArgs() []string {
	if l.Shipped {
		return nil
	}
	return l.flags()
}

func (l limits) String() string {
	if l.Shipped {
		return fmt.Sprintf("shipped defaults (%g / %d)", l.QPS, l.Burst)
	}
	return fmt.Sprintf("QPS %g / burst %d", l.QPS, l.Burst)
}

// sideConfig is one configuration of section 8: the contenders' limits and the world's pace.
type sideConfig struct {
	Limits limits
	World  time.Duration // the world's step (Porch renders after one, a Cluster is provisioned after two)
}

// primary is the configuration measured in full (where each request waits, latency at several sizes).
func (c sideConfig) primary() bool { return c.Limits == limitsQPS100 && c.World == worldStep }

func (c sideConfig) String() string {
	if c.World == 0 {
		return c.Limits.String() + ", world at zero delay"
	}
	return fmt.Sprintf("%s, world moving every %s", c.Limits, c.World)
}

// configRun is one configuration's ceiling (its world's) and both contenders' runs.
type configRun struct {
	Config     sideConfig
	Ceiling    ceiling // the world alone at this pace (issue 39, item 3)
	Ours, Peer contenderRun
	PeerErr    string // the peer could not be built or run
	// Control: the peer carrying the operator's kopf annotations (control.go), primary configuration only.
	Control    *contenderRun
	ControlErr string
}

// sideBySide is the operator and its controller-runtime peer under the same load, one after the other,
// in every configuration: the primary one in full, the others in one compact table.
type sideBySide struct {
	N int
	configRun
	More []configRun
}

// all is every configuration's run, the primary first.
func (sb *sideBySide) all() []configRun { return append([]configRun{sb.configRun}, sb.More...) }

// peerBuild is the peer's binary, or why there is none.
type peerBuild struct {
	bin string
	err error
}

// stackWrites is the side-by-side section: a stack per pace of the world, each contender at each limit.
func stackWrites(ctx context.Context, c *config, rep *report) error {
	root, err := kubeapi.RepoRoot()
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "o2ims-bench-peer-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	var pb peerBuild
	pb.bin, pb.err = buildPeer(ctx, root, dir)
	sb := &sideBySide{N: c.n}
	rep.SideBySide = sb
	for _, step := range sideWorlds {
		if err := worldRuns(ctx, c, sb, step, pb); err != nil {
			return err
		}
	}
	return nil
}

// worldRuns starts a stack whose world moves every step, measures the world alone, then each limit.
func worldRuns(ctx context.Context, c *config, sb *sideBySide, step time.Duration, pb peerBuild) error {
	started := time.Now()
	say(c, "8. starting a stack: kube-apiserver, etcd, the world moving every %s", step)
	st, err := stack.Start(ctx, stack.Options{Operator: c.operator,
		World: world.Options{RenderDelay: step, ProvisionDelay: 2 * step}})
	if err != nil {
		return err
	}
	defer st.Stop()
	say(c, "8. the world alone (step %s): %d PackageVariants at once, no operator", step, c.n)
	cl, err := measureCeiling(ctx, st, c.n)
	if err != nil {
		return err
	}
	say(c, "   %d Clusters Available in %s: %.1f/s %s", cl.Available, cl.Total.Round(100*time.Millisecond), cl.Rate, cl.Note)
	for _, l := range sideLimits {
		cr := configRun{Config: sideConfig{Limits: l, World: step}, Ceiling: cl}
		if err := runConfig(ctx, c, st, &cr, pb); err != nil {
			return err
		}
		if cr.Config.primary() {
			sb.configRun = cr
		} else {
			sb.More = append(sb.More, cr)
		}
	}
	say(c, "8. the world at step %s took %s", step, time.Since(started).Round(time.Second))
	return nil
}

// runConfig measures the operator, then the peer, in one configuration (the latency sizes only in the
// primary one).
func runConfig(ctx context.Context, c *config, st *stack.Stack, cr *configRun, pb peerBuild) error {
	var sizes []int
	if cr.Config.primary() {
		sizes = latencySizes
	}
	l := cr.Config.Limits
	run := "writes-" + l.Key + "-"
	args := strings.Join(l.oursArgs(), " ")
	if args == "" {
		args = "no limit flags"
	}
	say(c, "8. %s: the operator (%s), %d requests at once", cr.Config, args, c.n)
	op, err := startSelected(ctx, st, run+"ours", false, l.oursArgs()...)
	if err != nil {
		return err
	}
	if cr.Ours, err = measureContender(ctx, st, ours(op), run+"ours", c.n, sizes); err != nil {
		return err
	}
	say(c, "   %s", cr.Ours.line())
	var peer *contender
	err = pb.err
	if err == nil {
		say(c, "8. %s: the controller-runtime peer (%s), %d requests at once", cr.Config, strings.Join(l.flags(), " "), c.n)
		peer, err = startPeer(ctx, st, pb.bin, run+"peer", l.flags())
	}
	if err != nil {
		cr.PeerErr = err.Error()
		say(c, "   peer: %v", err)
		return nil
	}
	if cr.Peer, err = measureContender(ctx, st, peer, run+"peer", c.n, sizes); err != nil {
		cr.PeerErr = err.Error() + "; " + firstErrors(filepath.Join(st.Dir, "peer.log"), 3)
		say(c, "   peer: %s", cr.PeerErr)
		return nil
	}
	say(c, "   %s", cr.Peer.line())
	if cr.Config.primary() {
		runControl(ctx, c, st, cr, pb, run)
	}
	for round := 2; round <= sideRounds; round++ {
		if err := againReversed(ctx, c, st, cr, pb, fmt.Sprintf("%s%d-", run, round)); err != nil {
			return err
		}
	}
	return nil
}

// againReversed is another round of a configuration, the peer first, folded into its runs (rounds.go).
func againReversed(ctx context.Context, c *config, st *stack.Stack, cr *configRun, pb peerBuild, run string) error {
	l := cr.Config.Limits
	say(c, "8. %s, again in the reverse order: the control (primary only), the peer, then the operator", cr.Config)
	if cr.Control != nil {
		runControl(ctx, c, st, cr, pb, run)
	}
	p2, err := measurePeer(ctx, st, pb, run+"peer", l.flags(), c.n)
	if err != nil {
		return fmt.Errorf("the peer, again: %w", err)
	}
	say(c, "   %s", p2.line())
	op, err := startSelected(ctx, st, run+"ours", false, l.oursArgs()...)
	if err != nil {
		return err
	}
	o2, err := measureContender(ctx, st, ours(op), run+"ours", c.n, nil)
	if err != nil {
		return err
	}
	say(c, "   %s", o2.line())
	cr.Peer.addRound(p2)
	cr.Ours.addRound(o2)
	return nil
}
