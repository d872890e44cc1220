package cmstore

import (
	"context"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
)

// State is a model's whole state kept in one ConfigMap (the alarms', the performance jobs'), read
// through a Cache so that an NBI GET costs no API-server call, and decoded once per resourceVersion.
// Its writer reads its own writes at once. A read may be behind another replica's write by the
// informer's lag: a write made on it fails as Stale, and the writer's next attempt reads straight from
// the API server (Read), so no write is lost and none is retried on the same stale copy.
type State[T Versioned] struct {
	cache *Cache
	cms   typedcorev1.ConfigMapInterface
	codec Codec[T]

	mu   sync.Mutex
	last T      // the state last read or written (decoded once per resourceVersion)
	rv   string // last's resourceVersion ("": none yet)
}

// Codec is how a model's state is kept in its ConfigMap.
type Codec[T Versioned] struct {
	Name         string // the ConfigMap's, labelled so that the State's Cache selects it
	FieldManager string
	// Encode is the ConfigMap v is written as; ctx is the writer's (an NBI write names its caller).
	Encode func(context.Context, T) (*corev1.ConfigMap, error)
	// Decode reads a stored ConfigMap; an unreadable part is an error (never silently an empty state:
	// the next write would lose what it holds).
	Decode func(*corev1.ConfigMap) (T, error)
	Empty  func() T // the state while nothing is stored
}

// Version is where a state was read: the resourceVersion its write is made on, or none stored yet.
// A model's state embeds it (a copy of the state copies it).
type Version struct {
	rv     string
	stored bool
}

func (v *Version) version() *Version { return v }

// Versioned is a state that embeds Version.
type Versioned interface{ version() *Version }

// NewState keeps a model's state in the ConfigMap codec.Name of cms, read through cache.
func NewState[T Versioned](cache *Cache, cms typedcorev1.ConfigMapInterface, codec Codec[T]) *State[T] {
	return &State[T]{cache: cache, cms: cms, codec: codec}
}

// Load answers the state from the cache (with this replica's writes). The answer is shared: read it,
// never change it.
func (s *State[T]) Load(ctx context.Context) (T, error) {
	cm, err := s.cache.Get(ctx, s.codec.Name)
	if err != nil || cm == nil {
		return s.none(err)
	}
	return s.decoded(cm)
}

// Read is the base of a writer's attempt: the cache's state at the first; after a Stale one the API
// server's (one GET), which the cache answers from then on.
func (s *State[T]) Read(ctx context.Context, attempt int) (T, error) {
	if attempt <= 1 {
		return s.Load(ctx)
	}
	cm, err := s.cms.Get(ctx, s.codec.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return s.none(nil) // a cached copy deleted since is written over by the creation
	}
	if err != nil {
		return s.none(err)
	}
	s.cache.Wrote(cm)
	return s.decoded(cm)
}

// Stale reports whether a write failed for being made on an outdated state (another writer's came
// first, or the cache was behind a creation or a deletion): the next attempt reads afresh.
func Stale(err error) bool {
	return apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err) || apierrors.IsNotFound(err)
}

// Write stores v on the resourceVersion it was read at (a Stale error when another write came first);
// done, v is the stored state: its Version is the new one and every read here answers it at once.
func (s *State[T]) Write(ctx context.Context, v T) error {
	cm, err := s.codec.Encode(ctx, v)
	if err != nil {
		return err
	}
	cm.Name, cm.Namespace = s.codec.Name, s.cache.namespace
	out, err := write(ctx, s.cms, cm, *v.version(), s.codec.FieldManager)
	if err != nil {
		return err
	}
	*v.version() = Version{rv: out.ResourceVersion, stored: true}
	s.cache.Wrote(out)
	s.remember(v)
	return nil
}

// Update makes the next state from the current one with change and writes it when change says it changed
// something, on the resourceVersion it read. A Stale write is retried on the API server's state (Read),
// attempts times in all. It answers the state stored after it (the current one when nothing changed), and
// change's error as it is.
func (s *State[T]) Update(ctx context.Context, attempts int, change func(cur T) (next T, changed bool, err error)) (T, error) {
	for attempt := 1; ; attempt++ {
		cur, err := s.Read(ctx, attempt)
		if err != nil {
			return cur, err
		}
		next, changed, err := change(cur)
		if err != nil || !changed {
			return cur, err
		}
		err = s.Write(ctx, next)
		if err == nil || attempt >= attempts || !Stale(err) {
			return next, err
		}
	}
}

// Last is the state last read or written (T's zero value before the first), without a call.
func (s *State[T]) Last() T {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.last
}

func (s *State[T]) none(err error) (T, error) {
	if err != nil {
		var zero T
		return zero, err
	}
	return s.codec.Empty(), nil
}

func (s *State[T]) decoded(cm *corev1.ConfigMap) (T, error) {
	s.mu.Lock()
	if s.rv != "" && s.rv == cm.ResourceVersion {
		defer s.mu.Unlock()
		return s.last, nil
	}
	s.mu.Unlock()
	v, err := s.codec.Decode(cm) // unlocked: a large state takes a while, and Last need not wait
	if err != nil {
		var zero T
		return zero, err
	}
	*v.version() = Version{rv: cm.ResourceVersion, stored: true}
	s.remember(v)
	return v, nil
}

// remember keeps v as the last state unless a later one is kept already (a slow decode of an older
// copy does not replace this replica's newer write).
func (s *State[T]) remember(v T) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if rv := v.version().rv; s.rv == "" || !atLeast(s.rv, rv) {
		s.last, s.rv = v, rv
	}
}
