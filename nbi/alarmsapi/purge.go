package alarmsapi

import (
	"errors"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/o2ims-operator/o2ims-operator/alarms"
	"github.com/o2ims-operator/o2ims-operator/nbi"
	"github.com/o2ims-operator/o2ims-operator/nbi/query"
)

// The Purge Alarms task and the task operation occurrences (O2IMS Table 3.3.3-1; monitoring 1.2.0): the
// purge is done in the same write that records its task (package alarms: State.Purge), answered 202 with the
// task's Location.

func (a *API) taskRoutes(v string) {
	m := a.mux
	m.Handle("POST "+v+"/alarms/purge", nbi.VerbDelete, a.purge)
	// /alarms/{alarmEventRecordId} would take the other methods: the task answers them 405 (clause 3.3.4.7.3).
	for _, method := range []string{http.MethodGet, http.MethodPut, http.MethodPatch, http.MethodDelete} {
		m.Handle(method+" "+v+"/alarms/purge", nbi.VerbNone, onlyPost)
	}
	m.Handle("GET "+v+"/taskOperations", nbi.VerbList, a.listTasks)
	m.Handle("GET "+v+"/taskOperations/{operationOccurrenceId}", nbi.VerbList, a.getTask)
}

func onlyPost(_ http.ResponseWriter, r *http.Request) error {
	return nbi.NewProblem(http.StatusMethodNotAllowed, "method %s is not allowed on %s; allowed: POST", r.Method, r.URL.Path).
		WithHeader("Allow", http.MethodPost)
}

// purge runs a Purge Alarms task: 202 with the Location of its task operation occurrence, 400 for a
// PurgeRequest that names nothing or an unknown alarm, 409 for one naming an alarm that cannot go.
func (a *API) purge(w http.ResponseWriter, r *http.Request) error {
	data, err := readBody(r, query.MediaJSON)
	if err != nil {
		return err
	}
	var req alarms.PurgeRequest
	if err := query.DecodeJSON(data, &req); err != nil {
		return nbi.NewProblem(http.StatusBadRequest, "the body is not a PurgeRequest: %v", err)
	}
	if err := req.Validate(); err != nil {
		return nbi.NewProblem(http.StatusBadRequest, "%v", err)
	}
	ctx, cancel := a.mux.Config().CallTimeout(r.Context())
	defer cancel()
	id := uuid.NewString()
	_, err = a.store.Update(ctx, func(s *alarms.State) (bool, error) {
		_, err := s.Purge(id, req, time.Now().UTC())
		return err == nil, err
	})
	var conflict *alarms.ConflictError
	var unknown *alarms.UnknownAlarmError
	switch {
	case errors.As(err, &conflict):
		return nbi.NewProblem(http.StatusConflict, "%s", conflict.Message)
	case errors.As(err, &unknown):
		return nbi.NewProblem(http.StatusBadRequest, "%v: purge names alarms of the list", unknown)
	case err != nil:
		return storeError(err)
	}
	prefix := r.URL.Path[:len(r.URL.Path)-len("/alarms/purge")]
	w.Header().Set("Location", prefix+"/taskOperations/"+id)
	w.Header().Set("Content-Length", "0")
	w.WriteHeader(http.StatusAccepted)
	return nil
}

func (a *API) listTasks(w http.ResponseWriter, r *http.Request) error {
	q, err := nbi.ParseList(r.URL.RawQuery, nbi.SchemaListRules(alarms.TaskSchema))
	if err != nil {
		return err
	}
	s, err := a.load(r.Context())
	if err != nil {
		return err
	}
	var match func(*alarms.Task) bool
	if q.Filter != nil {
		match = func(t *alarms.Task) bool { return q.Filter.Match(t.Attrs()) }
	}
	byID := slices.SortedFunc(slices.Values(s.Tasks), func(x, y *alarms.Task) int { return strings.Compare(x.ID, y.ID) })
	candidates := nbi.After(byID, q.Marker, func(t *alarms.Task) string { return t.ID })
	page, more := nbi.Page(candidates, a.mux.Config().PageSize, match, func(t *alarms.Task) map[string]any {
		return nbi.ApplySchema(q.Selection, alarms.TaskSchema, t.Attrs())
	})
	if more {
		w.Header().Set("Link", q.NextLink(r.URL, page[len(page)-1]["id"].(string)))
	}
	a.mux.Write(w, r, http.StatusOK, page)
	return nil
}

func (a *API) getTask(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("operationOccurrenceId")
	if u, err := uuid.Parse(id); err != nil || u.String() != id {
		return nbi.NewProblem(http.StatusNotFound, "task operation %q not found: ids are lowercase UUIDs", nbi.Truncate(id, 100))
	}
	s, err := a.load(r.Context())
	if err != nil {
		return err
	}
	t, ok := s.Task(id)
	if !ok {
		return nbi.NewProblem(http.StatusNotFound, "task operation %q not found", id)
	}
	a.mux.Write(w, r, http.StatusOK, t.Attrs())
	return nil
}
