package framework

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"
)

// Refusal is why the API server will not let a watch start: the operator lacks a permission, or nothing
// serves the resource (its CustomResourceDefinition is absent). Neither mends itself by retrying; both are
// mended by an administrator applying something, after which the informer syncs by itself.
type Refusal string

const (
	RefusalForbidden    Refusal = "forbidden"    // 403: RBAC does not grant list/watch
	RefusalAbsent       Refusal = "absent"       // 404: the resource is not served (CRD not installed)
	RefusalUnauthorized Refusal = "unauthorized" // 401: the credentials are not accepted
)

// RemedyFunc says what grants a refused watch, e.g. "apply manifests/inventory". The framework knows
// resources, not how they are deployed; the operator's wiring (internal/app) fills that in.
type RemedyFunc func(gvr schema.GroupVersionResource, namespace string, why Refusal) string

func defaultRemedy(gvr schema.GroupVersionResource, namespace string, why Refusal) string {
	switch why {
	case RefusalForbidden:
		where := "cluster-wide"
		if namespace != "" {
			where = fmt.Sprintf("in namespace %q", namespace)
		}
		return fmt.Sprintf("grant list and watch on %s %s to the operator's service account", gvr.GroupResource(), where)
	case RefusalAbsent:
		return fmt.Sprintf("install the CustomResourceDefinition that serves %s", resourceName(gvr))
	default:
		return "check the operator's credentials (service account token or --kubeconfig)"
	}
}

// refusalOf classifies a reflector's error; "" is any other failure (a blip the reflector retries).
func refusalOf(err error) Refusal {
	switch {
	case apierrors.IsForbidden(err):
		return RefusalForbidden
	case apierrors.IsNotFound(err):
		return RefusalAbsent
	case apierrors.IsUnauthorized(err):
		return RefusalUnauthorized
	}
	return ""
}

// refusalRelog repeats a refusal that persists in the log, so the reason stays in a recent tail.
const refusalRelog = 5 * time.Minute

// readiness says why the operator is not ready — the body of /readyz — and reports refused watches once
// in the log, in one line naming the resource and what grants it.
type readiness struct {
	log    *zap.Logger
	remedy RemedyFunc
	clock  clock.PassiveClock // when a refusal was last logged

	mu       sync.Mutex
	stage    string // what the operator is doing while not ready
	refused  map[string]*refused
	degraded []degradation
}

// degradation is a part the operator runs without for now (DegradedFunc), under its id.
type degradation struct {
	id string
	fn DegradedFunc
}

// refused is one watch the API server refused; it is cleared when its informer lists again.
type refused struct {
	line     string
	inf      cache.SharedIndexInformer
	rv       string // the informer's last synced resource version when the refusal came
	loggedAt time.Time
}

func newReadiness(log *zap.Logger, remedy RemedyFunc) *readiness {
	if remedy == nil {
		remedy = defaultRemedy
	}
	return &readiness{log: log, remedy: remedy, clock: clock.RealClock{}, stage: "starting", refused: map[string]*refused{}}
}

func (r *readiness) setStage(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.stage = fmt.Sprintf(format, args...)
}

// watchErrorHandler replaces client-go's default for one informer: a refusal is reported here (client-go
// would only log "Failed to watch" at every retry, forever); anything else goes to the default.
func (r *readiness) watchErrorHandler(gvr schema.GroupVersionResource, namespace string, inf cache.SharedIndexInformer) cache.WatchErrorHandlerWithContext {
	return func(ctx context.Context, ref *cache.Reflector, err error) {
		why := refusalOf(err)
		if why == "" {
			cache.DefaultWatchErrorHandler(ctx, ref, err)
			return
		}
		r.refuse(gvr, namespace, inf, why, err)
	}
}

func (r *readiness) refuse(gvr schema.GroupVersionResource, namespace string, inf cache.SharedIndexInformer, why Refusal, err error) {
	line := refusalLine(gvr, namespace, why, err, r.remedy(gvr, namespace, why))
	key := resourceName(gvr) + "/" + namespace
	r.mu.Lock()
	prev := r.refused[key]
	now := r.clock.Now()
	log := prev == nil || prev.line != line || now.Sub(prev.loggedAt) >= refusalRelog
	entry := &refused{line: line, inf: inf, rv: inf.LastSyncResourceVersion(), loggedAt: now}
	if prev != nil && !log {
		entry.loggedAt = prev.loggedAt
	}
	r.refused[key] = entry
	r.mu.Unlock()
	if log {
		r.log.Error(line, zap.String("resource", resourceName(gvr)), zap.String("namespace", namespace),
			zap.String("refusal", string(why)))
	}
}

// refusalLine is the one line of a refusal: the resource, where, what the API server said, what grants it.
func refusalLine(gvr schema.GroupVersionResource, namespace string, why Refusal, err error, remedy string) string {
	where := ""
	if namespace != "" {
		where = fmt.Sprintf(" in namespace %q", namespace)
	}
	var said string
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		said = status.Status().Message
	}
	if said == "" {
		said = err.Error()
	}
	said = strings.Join(strings.Fields(said), " ") // one line, whatever the server wrote
	if len(said) > 300 {
		said = said[:300] + "…"
	}
	switch why {
	case RefusalForbidden:
		return fmt.Sprintf("cannot watch %s%s: permission denied (403: %s); %s", resourceName(gvr), where, said, remedy)
	case RefusalAbsent:
		return fmt.Sprintf("cannot watch %s%s: the API server does not serve it, its CustomResourceDefinition is absent (404: %s); %s",
			resourceName(gvr), where, said, remedy)
	default:
		return fmt.Sprintf("cannot watch %s%s: the credentials are not accepted (401: %s); %s", resourceName(gvr), where, said, remedy)
	}
}

// sweep clears refusals whose informer has listed since (an administrator granted or installed what was
// missing), logging that the watch works again.
func (r *readiness) sweep() {
	r.mu.Lock()
	var mended []string
	for key, e := range r.refused {
		if rv := e.inf.LastSyncResourceVersion(); rv != e.rv && rv != "" {
			mended = append(mended, key)
			delete(r.refused, key)
		}
	}
	r.mu.Unlock()
	sort.Strings(mended)
	for _, key := range mended {
		r.log.Info("watch works again", zap.String("watch", key))
	}
}

// refusals are the current refusals' lines, sorted.
func (r *readiness) refusals() []string {
	r.sweep()
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]string, 0, len(r.refused))
	for _, e := range r.refused {
		out = append(out, e.line)
	}
	sort.Strings(out)
	return out
}

// reason is why the operator is not ready, "" when it is: ready is the operator's own state (started,
// synced, not stopping); a refused watch makes it not ready too, even after the first sync.
func (r *readiness) reason(ready bool) string {
	lines := r.refusals()
	r.mu.Lock()
	stage := r.stage
	r.mu.Unlock()
	switch {
	case ready && len(lines) == 0:
		return ""
	case ready:
		return strings.Join(lines, "\n")
	case len(lines) > 0:
		return stage + "\n" + strings.Join(lines, "\n")
	default:
		return stage
	}
}

// degradations are the current "degraded: <id>: <why>" lines, in registration order.
func (r *readiness) degradations() []string {
	r.mu.Lock()
	ds := r.degraded
	r.mu.Unlock()
	var out []string
	for _, d := range ds {
		if why := d.fn(); why != "" {
			out = append(out, "degraded: "+d.id+": "+strings.Join(strings.Fields(why), " "))
		}
	}
	return out
}

// serve answers /readyz: 200 "ok", or 503 with "not ready: " and the reason, one line each. A degraded
// part adds a line to either and changes no status: the operator still serves what does not need that
// part, and a 503 would take the pod out of its Services (the NBI with it) for something a restart or
// another replica cannot mend.
func (r *readiness) serve(ready func() bool) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		degraded := r.degradations()
		if why := r.reason(ready()); why != "" {
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = fmt.Fprintf(w, "not ready: %s\n", why)
		} else {
			_, _ = w.Write([]byte("ok\n"))
		}
		for _, line := range degraded {
			_, _ = fmt.Fprintln(w, line)
		}
	}
}

type waitingKey struct{}

// ReportWaiting tells /readyz what a startup activity is waiting for (e.g. "the registry is not
// answering yet: 503"); it is a no-op outside a startup activity.
func ReportWaiting(ctx context.Context, format string, args ...any) {
	if fn, ok := ctx.Value(waitingKey{}).(func(string)); ok {
		fn(fmt.Sprintf(format, args...))
	}
}

func withWaiting(ctx context.Context, fn func(string)) context.Context {
	return context.WithValue(ctx, waitingKey{}, fn)
}

// resourceName is the fully qualified name kubectl takes: baremetalhosts.v1alpha1.metal3.io.
func resourceName(gvr schema.GroupVersionResource) string {
	if gvr.Group == "" {
		return gvr.Resource + "." + gvr.Version
	}
	return gvr.Resource + "." + gvr.Version + "." + gvr.Group
}
