package hosts

import (
	"fmt"
	"maps"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/o2ims-operator/o2ims-operator/api/external"
	"github.com/o2ims-operator/o2ims-operator/api/v1alpha1"
	"github.com/o2ims-operator/o2ims-operator/framework"
	"github.com/o2ims-operator/o2ims-operator/netbox"
)

// FaultPolicy is when a BMC fault takes a host out of the pool. A claimed host Metal3 cannot register is
// quarantined only when the fault persists — for Grace since the operator first saw it AND for
// ErrorCount of Metal3's failed attempts — or sooner when its cause is surer: the BMC refused the
// credentials (bmcerrors.go) and Metal3's retry was refused too, or our credentials Secret is gone or
// empty (at once). When Burst hosts fail together, nothing more is quarantined (a shared cause is
// likelier than that many broken BMCs) until fewer fail; and one request replaces at most
// MaxReplacements hosts this way.
//
// The defaults outlast a top-of-rack switch reboot with margin: BMO retries a failed registration after
// 1–2, then 2–4, then 4–8 minutes (calculateBackoff, 2^errorCount minutes jittered down by up to half),
// so errorCount 3 is reached 3–6 minutes after the first failure and 15 minutes of grace covers a
// switch reload (typically 5–10 minutes until its ports forward again) twice over. A fault that clears
// meanwhile lets Metal3 register the host and nothing is quarantined.
type FaultPolicy struct {
	Grace           time.Duration // BMC_FAULT_GRACE
	ErrorCount      int64         // BMC_FAULT_ERROR_COUNT
	Burst           int           // BMC_FAULT_BURST
	BurstWindow     time.Duration // BMC_FAULT_BURST_WINDOW
	MaxReplacements int           // BMC_MAX_REPLACEMENTS
}

// DefaultFaultPolicy is FaultPolicy's defaults (docs/configuration.md's table says the same).
var DefaultFaultPolicy = FaultPolicy{Grace: 15 * time.Minute, ErrorCount: 3, Burst: 3, BurstWindow: time.Hour, MaxReplacements: 3}

// authErrorCount is how many refusals of the credentials Metal3 must report before they are believed:
// its retry (1–2 minutes after the first) refused too, so one refusal during a BMC's own restart does
// not count.
const authErrorCount = 2

// faultGuard counts the BMC-fault quarantines within the burst window: "fail together" is those plus our
// BareMetalHosts in a registration error now. The count must survive a restart, or an operator in a
// crash loop over a bad rack would quarantine Burst more hosts per restart; so it is NetBox's: the pool's
// devices failed (quarantined) within the window, from the inventory view (Pool.FailedSince), joined by
// device with this process's own decisions (a claimed host's quarantine lands in NetBox passes after it
// was decided, once its BareMetalHost is gone). NetBox keeps the quarantine's reason only in its
// changelog, not on the device, so every device failed in the window counts, whatever its reason or
// author: the guard holds sooner, never later, and an administrator who restores devices (failed →
// staged) lowers the count at once. Without a pool only this process's decisions count.
type faultGuard struct {
	mu     sync.Mutex
	recent map[int32]time.Time // device → when this process decided its quarantine
	pool   Pool
}

// unknownBurst is "together" while the pool's view has not been listed since the start: NetBox's count
// is not known yet, so nothing is quarantined (heldMessage says so, without the alarm's phrase).
const unknownBurst = -1

// quarantined is how many devices were quarantined in the window ending at now (g.mu held); ok is false
// while the pool's view cannot count them yet.
func (g *faultGuard) quarantined(now time.Time, p FaultPolicy) (n int, ok bool) {
	maps.DeleteFunc(g.recent, func(_ int32, t time.Time) bool { return now.Sub(t) >= p.BurstWindow })
	if g.pool == nil {
		return len(g.recent), true
	}
	if !g.pool.IsSynced() {
		return 0, false
	}
	n = len(g.recent)
	for _, id := range g.pool.FailedSince(now.Add(-p.BurstWindow)) {
		if _, mine := g.recent[id]; !mine {
			n++
		}
	}
	return n, true
}

// admit decides the BMC-fault quarantine of device id at now with failing hosts in a registration error
// (the one judged included): allowed while the quarantines in the window plus failing stay within burst,
// and then recorded. together is that sum, for the message (unknownBurst: not counted yet).
func (g *faultGuard) admit(now time.Time, id int32, failing int, p FaultPolicy) (ok bool, together int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	over, together := g.overLocked(now, failing, p)
	if over {
		return false, together
	}
	if g.recent == nil {
		g.recent = map[int32]time.Time{}
	}
	g.recent[id] = now
	return true, together
}

// over tells, recording nothing, whether a quarantine now would break the burst: a host not quarantined
// for another reason (the request's replacement bound) still says that several fail together.
func (g *faultGuard) over(now time.Time, failing int, p FaultPolicy) (bool, int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.overLocked(now, failing, p)
}

func (g *faultGuard) overLocked(now time.Time, failing int, p FaultPolicy) (bool, int) {
	n, ok := g.quarantined(now, p)
	if !ok {
		return true, unknownBurst
	}
	return n+failing > p.Burst, n + failing
}

// faultJudge decides, by the fault policy and the burst guard, whether a claimed host's BMC fault
// quarantines it now.
type faultJudge struct {
	policy    FaultPolicy
	namespace string // Config.Metal3Namespace: where our BareMetalHosts are
	guard     *faultGuard
}

// failingHosts counts our BareMetalHosts (every request's, from the cache) in a registration error and
// not being deleted.
func (j faultJudge) failingHosts(c *framework.Cause) int {
	list, err := c.Cache.List(external.BareMetalHostGVR, j.namespace)
	if err != nil {
		return j.policy.Burst + 1 // cannot count: hold (a shared cause cannot be ruled out)
	}
	n := 0
	for _, b := range list {
		if b.GetLabels()[LabelManagedBy] == ManagedByValue && b.GetDeletionTimestamp() == nil && inRegistrationError(b) {
			n++
		}
	}
	return n
}

// extensionsReplacements counts, on the request, the hosts a BMC fault made it replace
// (status.extensions.hostReplacements): the bound survives restarts.
const extensionsReplacements = "hostReplacements"

func replacements(u *unstructured.Unstructured) int64 {
	n, _, _ := unstructured.NestedInt64(u.Object, v1alpha1.FieldStatus, v1alpha1.FieldExtensions, extensionsReplacements)
	return n
}

// heldMessage says why BMC-fault quarantines are held (the BMCFaultBurst alarm reads the phrase).
func heldMessage(together int, p FaultPolicy) string {
	if together == unknownBurst {
		return "BMC-fault quarantines wait until the inventory view has listed NetBox (recent quarantines are counted from it)"
	}
	return fmt.Sprintf("%s: %d hosts failed their BMC within %s (BMC_FAULT_BURST %d): a shared cause (the BMC network, Ironic, "+
		"a shared credentials Secret, the BMC address policy) is likelier than broken BMCs; waiting for it to clear",
		v1alpha1.QuarantinesHeld, together, p.BurstWindow, p.Burst)
}

// verdict is the judgement of one claimed host in a registration error.
type verdict struct {
	quarantine bool
	reason     netbox.QuarantineReason
	why        string // the record's reason (quarantine) or what the host waits for
	held       string // the burst hold, for the message ("" unless held by it)
}

// judge decides whether a registration error that is not certain quarantines the host now.
func (j faultJudge) judge(c *framework.Cause, s *Slot, f registrationFault, taken int64) verdict {
	p, detail := j.policy, f.detail
	since, err := time.Parse(time.RFC3339, s.FaultSince)
	if err != nil {
		since = c.Now
		s.FaultSince = c.Now.UTC().Format(time.RFC3339)
	}
	lasted := c.Now.Sub(since).Truncate(time.Second)
	persistent := f.count >= p.ErrorCount && lasted >= p.Grace
	if f.cause == causeAuth {
		persistent = f.count >= authErrorCount
	}
	switch {
	case !persistent && f.cause == causeAuth:
		return verdict{why: fmt.Sprintf("%s (errorCount %d, since %s; quarantined if Metal3's retry is refused too)",
			detail, f.count, since.UTC().Format(time.RFC3339))}
	case !persistent:
		return verdict{why: fmt.Sprintf("%s (errorCount %d, since %s; quarantined if it lasts %s and errorCount reaches %d)",
			detail, f.count, since.UTC().Format(time.RFC3339), p.Grace, p.ErrorCount)}
	}
	if taken >= int64(p.MaxReplacements) {
		return j.boundReached(c, verdict{why: fmt.Sprintf("%s; not quarantined: this request replaced %d hosts already (BMC_MAX_REPLACEMENTS); waiting for Metal3 to register it", detail, taken)})
	}
	id, _ := netbox.ParseIdentity(s.ID)
	if ok, together := j.guard.admit(c.Now, id, j.failingHosts(c), p); !ok {
		return verdict{why: detail, held: heldMessage(together, p)}
	}
	if f.cause == causeAuth {
		return verdict{quarantine: true, reason: f.cause.reason(), why: "Metal3 could not register it with its BMC credentials: " + detail}
	}
	return verdict{quarantine: true, reason: f.cause.reason(), why: fmt.Sprintf("Metal3 could not register it for %s (errorCount %d): %s", lasted, f.count, detail)}
}

// boundReached is the verdict on a host the request's replacement bound keeps: still the burst's hold
// when several hosts fail together, so the BMCFaultBurst alarm is raised (with the default bound equal
// to the burst, a rack failing behind one request reaches the bound first and never said so).
func (j faultJudge) boundReached(c *framework.Cause, v verdict) verdict {
	if over, together := j.guard.over(c.Now, j.failingHosts(c), j.policy); over {
		v.held = heldMessage(together, j.policy)
	}
	return v
}
