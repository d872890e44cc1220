package subscriptions

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"go.uber.org/zap"
	"k8s.io/utils/clock"

	"github.com/o2ims-operator/o2ims-operator/internal/backoff"
	"github.com/o2ims-operator/o2ims-operator/nbi/callback"
)

// delivery sends each subscriber's notifications in order, each until the callback accepts it (at least
// once), retrying with the operator's backoff.
type delivery struct {
	client  *http.Client // every connection through the callback policy
	retry   backoff.Exponential
	render  Renderer
	metrics *notifierMetrics
	clock   clock.WithTicker
	log     *zap.Logger
}

// retryBackoff waits base·2ⁿ up to max before retry n, each wait drawn from [d/2, d]: internal/backoff's
// Exponential centred on ¾·d with a spread of d/2 (its Jitter spreads over d·(1±Jitter/2)).
func retryBackoff(base, max time.Duration) backoff.Exponential {
	return backoff.Exponential{Base: base * 3 / 4, Max: max * 3 / 4, Jitter: 2.0 / 3}
}

// run delivers s's notifications until ctx ends (the subscription deleted, or the notifier stopped).
func (d *delivery) run(ctx context.Context, s *subscriber) {
	for {
		p := s.queue.next()
		if p == nil {
			select {
			case <-ctx.Done():
				return
			case <-s.queue.wake:
				continue
			}
		}
		if !d.send(ctx, s, p) {
			return
		}
		s.queue.done(p)
	}
}

// send delivers one notification, or counts it filtered; false when ctx ended first.
func (d *delivery) send(ctx context.Context, s *subscriber, p *note) bool {
	id := s.sub.SubscriptionID
	body, matched := d.render.Render(s.sub, s.filter, Notice{Kind: p.kind, ID: p.id, Prior: p.prior, Post: p.post})
	if !matched {
		d.metrics.filtered.WithLabelValues(id).Inc()
		return true
	}
	for attempt := 0; ; attempt++ {
		if attempt > 0 {
			d.metrics.retried.WithLabelValues(id).Inc()
		}
		err := d.post(ctx, s.sub.Callback, body)
		d.noteRefusal(s, err)
		if err == nil {
			d.metrics.delivered.WithLabelValues(id).Inc()
			d.metrics.latency.Observe(d.clock.Since(p.at).Seconds())
			return true
		}
		if ctx.Err() != nil {
			return false
		}
		d.metrics.failed.WithLabelValues(id).Inc()
		d.log.Debug("notification not delivered; retrying", zap.String("subscription", id), zap.Int("attempt", attempt+1), zap.Error(err))
		select {
		case <-ctx.Done():
			return false
		case <-d.clock.After(d.retry.Delay(attempt)):
		}
	}
}

// noteRefusal counts a delivery the callback policy refused and logs when a subscription's refusals
// start (with why) and end. The reference's Subscription has no member for a delivery status, so the
// log and o2ims_inventory_notifications_refused_total are where it shows. Only s's delivery calls it.
func (d *delivery) noteRefusal(s *subscriber, err error) {
	var reason callback.Reason
	re := callback.Refusal(err)
	if re != nil {
		reason = re.Reason
		d.metrics.refused.WithLabelValues(string(reason)).Inc()
	}
	was := s.refused
	s.refused = reason
	switch {
	case re != nil && was != reason:
		d.log.Warn("the callback policy refuses this subscription's callback; retrying with backoff",
			zap.String("subscription", s.sub.SubscriptionID), zap.String("reason", string(reason)), zap.Error(re))
	case re == nil && was != "":
		d.log.Info("the callback policy no longer refuses this subscription's callback", zap.String("subscription", s.sub.SubscriptionID))
	}
}

var errNotAccepted = errors.New("the callback did not accept the notification")

func (d *delivery) post(ctx context.Context, callback string, body []byte) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, callback, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := d.client.Do(req)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("%w: %d", errNotAccepted, resp.StatusCode)
	}
	return nil
}
