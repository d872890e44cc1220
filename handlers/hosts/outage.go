package hosts

// netboxWait is the host step's answer while NetBox cannot be used — unreachable (connection refused,
// timeouts, 5xx, 429), or not yet checked since an outage at start, or failing that check: the request
// waits with a message naming it ("NetBox unreachable since …; waiting") instead of an error, and the
// chain re-drives it after REQUEUE_INTERVAL while its budget keeps running (a long outage can still fail
// it by timeout). Nothing was lost: the records of this pass are written as usual, and a write whose
// answer was lost is read back by the next pass, never replayed. false for any other error.
func (st *Step) netboxWait(err error) (string, bool) {
	if err == nil {
		return "", false
	}
	why, ok := st.nb.Gate.Unavailability(err)
	if !ok {
		return "", false
	}
	return why + "; waiting", true
}
