package netbox

import (
	"context"

	"go.uber.org/zap"
)

// ReleaseResult is the outcome of Release.
type ReleaseResult string

const (
	Released    ReleaseResult = "released"     // this call cleared our ownership
	AlreadyFree ReleaseResult = "already-free" // staged and unowned already
	NotOurs     ReleaseResult = "not-ours"     // owned by someone else (or nobody, not staged): never touched
	Gone        ReleaseResult = "gone"         // the device no longer exists in NetBox
)

// maxReleaseRounds bounds the re-read/re-check loop on 412.
const maxReleaseRounds = 3

// Release gives a device back to the pool. It re-reads the device; only when
// requestUID owns it does it send one conditional PATCH with the fresh ETag:
// {"status":"staged","custom_fields":{<uid field>: null}}. A 412 re-reads and
// re-checks (bounded). An admin's decision is kept: when the device is not
// active/staged (say, failed) or left the pool, only the owner is cleared.
// Timeout/5xx: error with MayHaveLanded, not replayed; the next call re-reads.
func (c *Claims) Release(ctx context.Context, id int32, requestUID string) (ReleaseResult, error) {
	if err := checkUID("release", requestUID); err != nil {
		return "", err
	}
	if err := c.usable("release"); err != nil {
		return "", err
	}
	log := c.log.With(zap.Int32("deviceID", id))
	for round := 0; round < maxReleaseRounds; round++ {
		d, err := c.getDevice(ctx, "release", id)
		if IsKind(err, KindNotFound) {
			log.Info("NetBox device gone; nothing to release")
			return Gone, nil
		}
		if err != nil {
			return "", err
		}
		if d.Status == StatusStaged && d.unowned() {
			return AlreadyFree, nil
		}
		if !d.OwnedBy(requestUID) {
			log.Info("NetBox device owned by another request; not released")
			return NotOurs, nil
		}
		status := ""
		if d.Managed && (d.Status == StatusActive || d.Status == StatusStaged) {
			status = StatusStaged
		}
		_, err = c.patchDevice(ctx, "release", id, d.ETag,
			devicePatch{status: status, custom: map[string]any{c.cfg.Fields.RequestUID: nil}})
		switch {
		case err == nil:
			log.Info("NetBox device released", zap.Bool("statusKept", status == ""))
			return Released, nil
		case IsKind(err, KindPrecondition):
			continue // changed since our read: re-read and re-check
		case IsKind(err, KindNotFound):
			return Gone, nil
		default:
			return "", err
		}
	}
	return "", &Error{Kind: KindPrecondition, Op: "release", Retryable: true,
		Err: errString("the device kept changing during release; try again")}
}

type errString string

func (e errString) Error() string { return string(e) }
