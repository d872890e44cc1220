package alarms

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
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
	cmstore.Version
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
	c := &State{Alarms: make([]*Alarm, len(s.Alarms)), Config: s.Config.Clone(), Version: s.Version, Tasks: slices.Clone(s.Tasks)}
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

// Store reads the alarms' ConfigMap through a cache of it (cmstore.State: an NBI GET costs no API-server
// call) and writes it through the API server.
type Store struct {
	state *cmstore.State[*State]
	cache *cmstore.Cache
	now   func() time.Time
}

// NewStore stores in namespace (the operator's; "" is default). Its cache, one informer of the
// ConfigMap labelled StoreLabel, starts at the first read.
func NewStore(kube kubernetes.Interface, namespace string) *Store {
	if namespace == "" {
		namespace = "default"
	}
	cache := cmstore.New(kube, namespace, StoreLabel)
	codec := cmstore.Codec[*State]{Name: StoreName, FieldManager: "o2ims-alarms", Encode: encode, Decode: decode,
		Empty: func() *State { return &State{Config: serviceconfig.Default()} }}
	return &Store{state: cmstore.NewState(cache, kube.CoreV1().ConfigMaps(namespace), codec), cache: cache, now: time.Now}
}

// Close stops the cache's informer (a test's store; the operator's lives as long as it does).
func (st *Store) Close() { st.cache.Close() }

// WithClock sets the clock the retention period is measured on (default time.Now).
func (st *Store) WithClock(now func() time.Time) *Store {
	st.now = now
	return st
}

// Load reads the state (an empty one, with the default configuration, before anything was stored). The
// answer is shared: read it, never change it.
func (st *Store) Load(ctx context.Context) (*State, error) { return st.state.Load(ctx) }

// Last is the state as last read or written by this replica (nil before the first), without a call.
func (st *Store) Last() *State { return st.state.Last() }

// Update applies change to a copy of the state and writes it when change says it changed something
// (or pruning dropped alarms), on the resourceVersion it read; a write on an outdated state is read
// again from the API server and retried. It answers the state stored after it, and change's error as
// it is. A change that writes nothing may have been decided on a cache a moment behind another
// replica's write: the raiser's next pass decides again.
func (st *Store) Update(ctx context.Context, change func(*State) (bool, error)) (*State, error) {
	return st.state.Update(ctx, updateAttempts, func(cur *State) (*State, bool, error) {
		next := cur.clone()
		changed, err := change(next)
		if err != nil {
			return nil, false, err
		}
		return next, next.prune(st.now()) || changed, nil
	})
}

func encode(ctx context.Context, s *State) (*corev1.ConfigMap, error) {
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
			Labels:      map[string]string{StoreLabel: "true", "app.kubernetes.io/name": "o2ims-operator"},
			Annotations: caller.Annotate(ctx, nil), // an NBI write names its caller (issue 35)
		},
		Data:       data,
		BinaryData: map[string][]byte{alarmsKey: packed},
	}, nil
}

// decode reads the ConfigMap; an unreadable part is an error (never silently an empty list: the next
// write would lose the alarms).
func decode(cm *corev1.ConfigMap) (*State, error) {
	s := &State{Config: ServiceConfig{RetentionPeriod: DefaultRetentionDays}}
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
