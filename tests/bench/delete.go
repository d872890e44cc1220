package main

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"

	"github.com/o2ims-operator/o2ims-operator/tests/stack"
)

// deletion is one run's 1 000 fulfilled requests deleted at once (by the admin, 64 concurrent DELETEs),
// followed until every one is gone: the operator releases each (its PackageVariant) and drops its
// finalizer.
type deletion struct {
	N           int
	Gone        int
	Total       time.Duration // first DELETE sent → last request gone (watch DELETED)
	Rate        float64       // gone ÷ Total
	Calls       map[string]float64
	RateLimiter histDelta
	CPU         cpuWindow
	Note        string
}

// CallsPerRequest is every API call the operator made for the releases (reads included; Events and the
// Lease renewals not) per request gone.
func (d deletion) CallsPerRequest() float64 {
	t := 0.0
	for k, v := range d.Calls {
		if !containsSpace(k) && k != "leases" && k != "events" {
			t += v
		}
	}
	return t / float64(max(d.Gone, 1))
}

// CPUPer1000 is the operator's CPU seconds per 1 000 requests gone.
func (d deletion) CPUPer1000() float64 {
	return d.CPU.ByPid["operator"] / float64(max(d.Gone, 1)) * 1000
}

// runDelete deletes the run's requests at once and follows them until gone.
func runDelete(ctx context.Context, st *stack.Stack, op *stack.Operator, run string, n int) (deletion, error) {
	d := deletion{N: n}
	dyn := fastAdmin(st)
	selector := runLabel + "=" + run
	list, err := dyn.Resource(prGVR).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return d, err
	}
	w, err := dyn.Resource(prGVR).Watch(ctx, metav1.ListOptions{LabelSelector: selector, ResourceVersion: list.GetResourceVersion()})
	if err != nil {
		return d, err
	}
	defer func() { w.Stop() }()
	left := map[string]bool{}
	for _, u := range list.Items {
		left[u.GetName()] = true
	}
	before, err := op.Scrape()
	if err != nil {
		return d, err
	}
	watchPids := map[string]int{"operator": op.Pid()}
	if pids := st.API.PIDs(); len(pids) == 2 {
		watchPids["etcd"], watchPids["kube-apiserver"] = pids[0], pids[1]
	}
	m := startMeter(watchPids)
	t0 := time.Now()
	// One DELETE per request from 64 concurrent callers, as the creates were made (a DeleteCollection of
	// 1 000 can outlast the API server's request timeout on a busy machine).
	if err := deleteAll(ctx, dyn, list.Items, 64); err != nil {
		return d, err
	}
	var last time.Time
	timeout := time.After(3 * time.Minute)
	rv := list.GetResourceVersion()
	for len(left) > 0 && d.Note == "" {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok || ev.Type == watch.Error {
				// The API server ended the watch (its timeout, or overload): go on from the last version
				// seen, or from a fresh list of what is left when that version is gone.
				w.Stop()
				relist := ok // an Error event: the version may be gone (410)
				if !relist {
					if w, err = dyn.Resource(prGVR).Watch(ctx, metav1.ListOptions{LabelSelector: selector, ResourceVersion: rv}); err != nil {
						relist = true
					}
				}
				if relist {
					l, lerr := dyn.Resource(prGVR).List(ctx, metav1.ListOptions{LabelSelector: selector})
					if lerr != nil {
						return d, lerr
					}
					still := map[string]bool{}
					for _, u := range l.Items {
						still[u.GetName()] = true
					}
					for name := range left {
						if !still[name] {
							delete(left, name)
							d.Gone++
							last = time.Now()
						}
					}
					rv = l.GetResourceVersion()
					if w, err = dyn.Resource(prGVR).Watch(ctx, metav1.ListOptions{LabelSelector: selector, ResourceVersion: rv}); err != nil {
						return d, err
					}
				}
				continue
			}
			u, ok := ev.Object.(interface {
				GetName() string
				GetResourceVersion() string
			})
			if !ok {
				continue
			}
			rv = u.GetResourceVersion()
			if ev.Type == watch.Deleted && left[u.GetName()] {
				delete(left, u.GetName())
				d.Gone++
				last = time.Now()
			}
		case <-timeout:
			d.Note = fmt.Sprintf("%d requests were not gone within 3 minutes", len(left))
		case <-ctx.Done():
			return d, ctx.Err()
		}
	}
	d.CPU = m.end()
	d.Total = last.Sub(t0)
	if d.Total > 0 {
		d.Rate = float64(d.Gone) / d.Total.Seconds()
	}
	after, err := settle(op, 2*time.Second, 20*time.Second)
	if err != nil {
		return d, err
	}
	d.Calls = restRequestsDelta(before, after, func(l map[string]string) []string {
		if l["method"] == http.MethodHead || l["method"] == "" {
			return nil
		}
		return []string{l["resource"], l["resource"] + " " + l["method"]}
	})
	d.RateLimiter = histogramDelta(before, after, "rest_client_rate_limiter_duration_seconds", nil)
	return d, nil
}

func deleteAll(ctx context.Context, dyn dynamic.Interface, objs []unstructured.Unstructured, workers int) error {
	next := make(chan string)
	errs := make(chan error, workers)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var first error
			for name := range next {
				if err := dyn.Resource(prGVR).Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) && first == nil {
					first = fmt.Errorf("deleting %s: %w", name, err)
				}
			}
			errs <- first
		}()
	}
	for i := range objs {
		next <- objs[i].GetName()
	}
	close(next)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
