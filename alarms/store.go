package alarms

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/o2ims-operator/o2ims-operator/cmstore"
	"github.com/o2ims-operator/o2ims-operator/nbi/caller"
	"github.com/o2ims-operator/o2ims-operator/serviceconfig"
)

// The alarms and the alarm service configuration are one ConfigMap in the operator's namespace, as the
// subscriptions are ConfigMaps there: no CRD to install, shared by every replica, surviving restarts.
// One object, not one per alarm: a list is one read, and every change (the raiser's on the leader, an
// SMO's acknowledgement or configuration on whichever replica serves it) is one write made on the
// resourceVersion it read, so none overwrites another (a conflict is read again and retried). Its size
// is bounded: active alarms plus those cleared within the retention period, at most MaxAlarms, gzip
// JSON (a few hundred bytes an alarm, so the cap stays well below a ConfigMap's 1 MiB).
const (
	StoreName      = "o2ims-alarms"
	StoreLabel     = "o2ims.provisioning.oran.org/alarms"
	alarmsKey      = "alarms.json.gz"
	configKey      = "alarmServiceConfiguration.json"
	tasksKey       = "taskOperations.json"
	updateAttempts = 5
)

// MaxAlarms is the hard cap of stored alarms. Cleared ones beyond it go first, oldest first (never one
// held cleared by hand: its fault still lasts); a new alarm beyond it with only active ones stored is not
// raised (o2ims_alarms_dropped_total counts it).
const MaxAlarms = 2000

// MaxAlertAlarms caps the active alarms of Alertmanager's alerts (PrometheusAlertFiring) within MaxAlarms,
// so a webhook caller cannot take the room the operator's own faults need; beyond it an alert is not
// raised and o2ims_alarms_dropped_total counts it. An alert's alarm is far larger than the operator's
// (labels and annotations), which this also bounds.
const MaxAlertAlarms = 200

// Retention: cleared alarms are kept retentionPeriod days (the reference's least: 1).
const (
	DefaultRetentionDays = serviceconfig.DefaultRetentionDays
	MaxRetentionDays     = serviceconfig.MaxRetentionDays
)

// ServiceConfig is the reference's AlarmServiceConfiguration, the performance API's in shape.
type ServiceConfig = serviceconfig.Config

// State is everything stored: the alarms sorted by id, and the configuration.
type State struct {
	Alarms []*Alarm
	Config ServiceConfig
	Tasks  []*Task // task operation occurrences, oldest first (tasks.go)
	rv     string
	stored bool // the ConfigMap exists (written as an update, not a creation)
}

// Get answers the alarm with id.
func (s *State) Get(id string) (*Alarm, bool) {
	i, ok := slices.BinarySearchFunc(s.Alarms, id, func(a *Alarm, id string) int { return strings.Compare(a.ID, id) })
	if !ok {
		return nil, false
	}
	return s.Alarms[i], true
}

// put adds or replaces a, keeping the order.
func (s *State) put(a *Alarm) {
	i, ok := slices.BinarySearchFunc(s.Alarms, a.ID, func(x *Alarm, id string) int { return strings.Compare(x.ID, id) })
	if ok {
		s.Alarms[i] = a
		return
	}
	s.Alarms = slices.Insert(s.Alarms, i, a)
}

// Active counts the raised alarms.
func (s *State) Active() int {
	n := 0
	for _, a := range s.Alarms {
		if a.Active() {
			n++
		}
	}
	return n
}

// ActiveOf counts the active alarms of def.
func (s *State) ActiveOf(def *Definition) int {
	n := 0
	for _, a := range s.Alarms {
		if a.Active() && a.DefinitionID == def.ID() {
			n++
		}
	}
	return n
}

func (s *State) clone() *State {
	c := &State{Alarms: make([]*Alarm, len(s.Alarms)), Config: s.Config.Clone(), rv: s.rv, stored: s.stored, Tasks: slices.Clone(s.Tasks)}
	for i, a := range s.Alarms {
		c.Alarms[i] = a.clone()
	}
	return c
}

// prune drops cleared alarms older than the retention period, then the oldest cleared ones beyond
// MaxAlarms; it reports whether it dropped any. An alarm held cleared by hand stays whatever its age: it
// is what keeps its lasting fault from being raised again (bounded by the faults that last).
func (s *State) prune(now time.Time) bool {
	before := len(s.Alarms)
	horizon := now.Add(-time.Duration(s.Config.RetentionPeriod) * 24 * time.Hour)
	s.Alarms = slices.DeleteFunc(s.Alarms, func(a *Alarm) bool { return a.Cleared != nil && !a.Held && a.Cleared.Before(horizon) })
	if over := len(s.Alarms) - MaxAlarms; over > 0 {
		var cleared []*Alarm
		for _, a := range s.Alarms {
			if !a.Active() && !a.Held {
				cleared = append(cleared, a)
			}
		}
		slices.SortFunc(cleared, func(a, b *Alarm) int { return a.Cleared.Compare(*b.Cleared) })
		drop := map[*Alarm]bool{}
		for _, a := range cleared[:min(over, len(cleared))] {
			drop[a] = true
		}
		s.Alarms = slices.DeleteFunc(s.Alarms, func(a *Alarm) bool { return drop[a] })
	}
	return len(s.Alarms) != before
}

// Store reads and writes the alarms' ConfigMap.
type Store struct {
	kube      kubernetes.Interface
	namespace string
	now       func() time.Time

	mu   sync.Mutex
	last *State // the last state read or written (decoded once per resourceVersion)
}

// NewStore stores in namespace (the operator's; "" is default).
func NewStore(kube kubernetes.Interface, namespace string) *Store {
	if namespace == "" {
		namespace = "default"
	}
	return &Store{kube: kube, namespace: namespace, now: time.Now}
}

// WithClock sets the clock the retention period is measured on (default time.Now).
func (st *Store) WithClock(now func() time.Time) *Store {
	st.now = now
	return st
}

// Load reads the state (an empty one, with the default configuration, before anything was stored). The
// answer is shared: read it, never change it.
func (st *Store) Load(ctx context.Context) (*State, error) {
	cm, err := st.kube.CoreV1().ConfigMaps(st.namespace).Get(ctx, StoreName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return &State{Config: serviceconfig.Default()}, nil
	}
	if err != nil {
		return nil, err
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.last != nil && st.last.rv == cm.ResourceVersion {
		return st.last, nil
	}
	s, err := decode(cm)
	if err != nil {
		return nil, err
	}
	st.last = s
	return s, nil
}

// Last is the state as last read or written by this replica (nil before the first), without a call.
func (st *Store) Last() *State {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.last
}

// Update applies change to a copy of the state and writes it when change says it changed something
// (or pruning dropped alarms), on the resourceVersion it read; a conflict is read again and retried. It
// answers the state stored after it, and change's error as it is.
func (st *Store) Update(ctx context.Context, change func(*State) (bool, error)) (*State, error) {
	for attempt := 1; ; attempt++ {
		cur, err := st.Load(ctx)
		if err != nil {
			return nil, err
		}
		next := cur.clone()
		changed, err := change(next)
		if err != nil {
			return nil, err
		}
		if next.prune(st.now()) {
			changed = true
		}
		if !changed {
			return cur, nil
		}
		err = st.write(ctx, next)
		if err == nil || attempt == updateAttempts || !(apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err)) {
			return next, err
		}
	}
}

func (st *Store) write(ctx context.Context, s *State) error {
	cm, err := encode(s)
	if err != nil {
		return err
	}
	cm.Namespace = st.namespace
	cm.Annotations = caller.Annotate(ctx, cm.Annotations) // an NBI write names its caller (issue 35)
	rv, err := cmstore.Write(ctx, st.kube.CoreV1().ConfigMaps(st.namespace), cm, s.rv, s.stored, "o2ims-alarms")
	if err != nil {
		return err
	}
	s.rv, s.stored = rv, true
	st.mu.Lock()
	st.last = s
	st.mu.Unlock()
	return nil
}

func encode(s *State) (*corev1.ConfigMap, error) {
	packed, err := cmstore.GzipJSON(s.Alarms)
	if err != nil {
		return nil, err
	}
	cfg, err := json.Marshal(s.Config)
	if err != nil {
		return nil, err
	}
	data := map[string]string{configKey: string(cfg)}
	if len(s.Tasks) > 0 {
		tasks, err := json.Marshal(s.Tasks)
		if err != nil {
			return nil, err
		}
		data[tasksKey] = string(tasks)
	}
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{
			Name:   StoreName,
			Labels: map[string]string{StoreLabel: "true", "app.kubernetes.io/name": "o2ims-operator"},
		},
		Data:       data,
		BinaryData: map[string][]byte{alarmsKey: packed},
	}, nil
}

// decode reads the ConfigMap; an unreadable part is an error (never silently an empty list: the next
// write would lose the alarms).
func decode(cm *corev1.ConfigMap) (*State, error) {
	s := &State{rv: cm.ResourceVersion, stored: true, Config: ServiceConfig{RetentionPeriod: DefaultRetentionDays}}
	if raw, ok := cm.Data[configKey]; ok {
		if err := json.Unmarshal([]byte(raw), &s.Config); err != nil {
			return nil, fmt.Errorf("ConfigMap %s: %s is not an AlarmServiceConfiguration: %w", cm.Name, configKey, err)
		}
	}
	if s.Config.Extensions == nil {
		s.Config.Extensions = map[string]any{}
	}
	if raw, ok := cm.Data[tasksKey]; ok {
		if err := json.Unmarshal([]byte(raw), &s.Tasks); err != nil {
			return nil, fmt.Errorf("ConfigMap %s: %s: %w", cm.Name, tasksKey, err)
		}
	}
	if raw, ok := cm.BinaryData[alarmsKey]; ok {
		if err := cmstore.GunzipJSON(raw, &s.Alarms); err != nil {
			return nil, fmt.Errorf("ConfigMap %s: %s: %w", cm.Name, alarmsKey, err)
		}
	}
	slices.SortFunc(s.Alarms, func(a, b *Alarm) int { return strings.Compare(a.ID, b.ID) })
	return s, nil
}
