package performance

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/o2ims-operator/o2ims-operator/cmstore"
	"github.com/o2ims-operator/o2ims-operator/nbi/caller"
	"github.com/o2ims-operator/o2ims-operator/serviceconfig"
)

// The jobs, their latest results and the performance service configuration are one ConfigMap in the
// operator's namespace, as the alarms are (package alarms: store.go) and the subscriptions are ConfigMaps
// there: no CRD to install, shared by every replica, surviving restarts and failover. Every change (an
// SMO's create or delete on whichever replica serves it, the leader's collections) is one write on the
// resourceVersion it read, so none overwrites another (a conflict is read again and retried). Its size
// is bounded by Bounds (jobs × results), gzip JSON.
const (
	StoreName      = "o2ims-performance"
	StoreLabel     = "o2ims.provisioning.oran.org/performance"
	jobsKey        = "measurementJobs.json.gz"
	configKey      = "performanceServiceConfiguration.json"
	updateAttempts = 5
)

// State is everything stored: the jobs sorted by id, and the configuration.
type State struct {
	Jobs   []*Job
	Config ServiceConfig
	cmstore.Version
}

// Get answers the job with id.
func (s *State) Get(id string) (*Job, bool) {
	i, ok := slices.BinarySearchFunc(s.Jobs, id, func(j *Job, id string) int { return strings.Compare(j.ID, id) })
	if !ok {
		return nil, false
	}
	return s.Jobs[i], true
}

// Put adds or replaces j, keeping the order.
func (s *State) Put(j *Job) {
	i, ok := slices.BinarySearchFunc(s.Jobs, j.ID, func(x *Job, id string) int { return strings.Compare(x.ID, id) })
	if ok {
		s.Jobs[i] = j
		return
	}
	s.Jobs = slices.Insert(s.Jobs, i, j)
}

// Delete removes the job with id; false when there is none.
func (s *State) Delete(id string) bool {
	before := len(s.Jobs)
	s.Jobs = slices.DeleteFunc(s.Jobs, func(j *Job) bool { return j.ID == id })
	return len(s.Jobs) != before
}

func (s *State) clone() *State {
	c := &State{Jobs: make([]*Job, len(s.Jobs)), Config: s.Config.Clone(), Version: s.Version}
	for i, j := range s.Jobs {
		c.Jobs[i] = j.clone()
	}
	return c
}

// Store keeps the performance ConfigMap: read through its cache (cmstore.State), so a GET of the jobs
// or the configuration makes no API-server call; written through the API server.
type Store struct {
	jobs  *cmstore.State[*State]
	cache *cmstore.Cache
}

// NewStore stores in namespace (the operator's; "" is default), reading through one informer of the
// ConfigMap labelled StoreLabel, started by the first read.
func NewStore(kube kubernetes.Interface, namespace string) *Store {
	if namespace == "" {
		namespace = "default"
	}
	cache := cmstore.New(kube, namespace, StoreLabel)
	return &Store{cache: cache, jobs: cmstore.NewState(cache, kube.CoreV1().ConfigMaps(namespace), cmstore.Codec[*State]{
		Name: StoreName, FieldManager: "o2ims-performance", Encode: encode, Decode: decode,
		Empty: func() *State { return &State{Config: serviceconfig.Default()} },
	})}
}

// Load reads the state (empty, with the default configuration, before anything was stored). The answer
// is shared: read it, never change it.
func (st *Store) Load(ctx context.Context) (*State, error) { return st.jobs.Load(ctx) }

// Close stops the informer (a test's store: the operator's lives as long as the process).
func (st *Store) Close() { st.cache.Close() }

// Update applies change to a copy of the state and writes it when change says it changed something, on
// the resourceVersion it read; when another write came first, it reads the API server's state and
// tries again. It answers the state stored after it, and change's error as it is.
func (st *Store) Update(ctx context.Context, change func(*State) (bool, error)) (*State, error) {
	return st.jobs.Update(ctx, updateAttempts, func(cur *State) (*State, bool, error) {
		next := cur.clone()
		changed, err := change(next)
		return next, changed, err
	})
}

func encode(ctx context.Context, s *State) (*corev1.ConfigMap, error) {
	packed, err := cmstore.GzipJSON(s.Jobs)
	if err != nil {
		return nil, err
	}
	cfg, err := json.Marshal(s.Config)
	if err != nil {
		return nil, err
	}
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{
			Labels:      map[string]string{StoreLabel: "true", "app.kubernetes.io/name": "o2ims-operator"},
			Annotations: caller.Annotate(ctx, nil), // an NBI write names its caller
		},
		Data:       map[string]string{configKey: string(cfg)},
		BinaryData: map[string][]byte{jobsKey: packed},
	}, nil
}

// decode reads the ConfigMap; an unreadable part is an error (never silently no jobs: the next write
// would lose them).
func decode(cm *corev1.ConfigMap) (*State, error) {
	s := &State{Config: serviceconfig.Default()}
	if raw, ok := cm.Data[configKey]; ok {
		if err := json.Unmarshal([]byte(raw), &s.Config); err != nil {
			return nil, fmt.Errorf("ConfigMap %s: %s is not a PerformanceServiceConfiguration: %w", cm.Name, configKey, err)
		}
	}
	if s.Config.Extensions == nil {
		s.Config.Extensions = map[string]any{}
	}
	if raw, ok := cm.BinaryData[jobsKey]; ok {
		if err := cmstore.GunzipJSON(raw, &s.Jobs); err != nil {
			return nil, fmt.Errorf("ConfigMap %s: %s: %w", cm.Name, jobsKey, err)
		}
	}
	slices.SortFunc(s.Jobs, func(a, b *Job) int { return strings.Compare(a.ID, b.ID) })
	return s, nil
}
