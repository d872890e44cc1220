package hosts

import (
	"context"
	"errors"
	"fmt"
	"regexp"

	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"

	"github.com/o2ims-operator/o2ims-operator/api/external"
	"github.com/o2ims-operator/o2ims-operator/api/v1alpha1"
	"github.com/o2ims-operator/o2ims-operator/framework"
	"github.com/o2ims-operator/o2ims-operator/handlers/kube"
	"github.com/o2ims-operator/o2ims-operator/netbox"
)

// Labels and annotations on the Metal3 objects we create, so a Metal3 machine template can select the
// cluster's hosts and we can tell our objects from anyone else's (with Config.OwnerAnnotation).
const (
	LabelCluster           = "o2ims.provisioning.oran.org/cluster"
	LabelRole              = "o2ims.provisioning.oran.org/role"
	LabelManagedBy         = "app.kubernetes.io/managed-by"
	ManagedByValue         = "o2ims-operator"
	AnnotationNetBoxDevice = "o2ims.provisioning.oran.org/netbox-device"
)

// BareMetalHost and BMC Secret names follow the host identity, never the device name.
func bmhName(id int32) string       { return netbox.Identity(id) }
func bmcSecretName(id int32) string { return netbox.Identity(id) + "-bmc-secret" }

// notOursError: an object of our name exists and was not created for this request. We never adopt or
// overwrite it; the request cannot use this host.
type notOursError struct{ kind, ref string }

func (e *notOursError) Error() string {
	return fmt.Sprintf("%s %s already exists and was not created for this request; it is left alone", e.kind, e.ref)
}

// hostStepError makes a Metal3 object we must not adopt a permanent failure naming the host.
func hostStepError(s *Slot, err error) error {
	var notOurs *notOursError
	if errors.As(err, &notOurs) {
		return &framework.PermanentError{Message: fmt.Sprintf("host %s: %s", s.ID, notOurs.Error())}
	}
	return err
}

// metal3 makes, checks and removes our Metal3 objects of a host: its BMC Secret (the credentials copied
// from the labelled Secret) and its BareMetalHost, annotated with the request that owns them.
type metal3 struct {
	cfg       Config
	core      kubernetes.Interface // Secrets: live, never cached
	api       kube.Client          // BareMetalHosts
	consumers consumers            // a host in use is never removed (consumer.go)
}

// ownedByRequest: an object of ours was made for the request of uid.
func (m metal3) ownedByRequest(annotations map[string]string, uid string) bool {
	return annotations[m.cfg.OwnerAnnotation] == uid
}

// registration is what one pass saw of the claimed hosts in Metal3.
type registration struct {
	claimed, available int
	waiting            []string // "netbox-<id>: what it waits for", one per host not available yet
	refused            []string // "netbox-<id> (why)", one per host set aside in this pass
	held               string   // why BMC-fault quarantines are held (bmcfault.go), "" when they are not
}

// registerClaimed registers the claimed hosts with Metal3 and looks at their state.
func (st *Step) registerClaimed(ctx context.Context, c *framework.Cause, slots []Slot, cluster string) (registration, error) {
	var r registration
	taken := replacements(c.Object)
	before := taken
	for i := range slots {
		s := &slots[i]
		if s.Surplus || s.Phase != PhaseClaimed {
			continue
		}
		r.claimed++
		ready, detail, fault, err := st.registered(ctx, c, s, cluster)
		if err != nil {
			return registration{}, err
		}
		if !fault.failing {
			s.FaultSince = ""
			if ready {
				r.available++
			} else {
				r.waiting = append(r.waiting, s.ID+": "+detail)
			}
			continue
		}
		fault.detail = detail
		v, err := st.onRegistrationError(ctx, c, s, fault, cluster, taken)
		if err != nil {
			return registration{}, err
		}
		if !v.quarantine {
			r.waiting = append(r.waiting, s.ID+": "+v.why)
			if v.held != "" {
				r.held = v.held
			}
			continue
		}
		// Set aside: its position is chosen again. The record lands first; the next passes remove our
		// Metal3 objects (checkpoint) and quarantine the device (releaseSlots).
		s.Surplus, s.Refused, s.RefusedReason, s.FaultSince = true, v.why, string(v.reason), ""
		taken++
		c.Logger.Info("the claimed host cannot be registered; quarantining it and choosing another",
			zap.String("host", s.ID), zap.String("reason", string(v.reason)), zap.String("why", v.why))
		r.claimed--
		r.refused = append(r.refused, fmt.Sprintf("%s (%s)", s.ID, v.why))
	}
	if taken != before {
		c.Patch.SetStatus(taken, v1alpha1.FieldExtensions, extensionsReplacements)
	}
	return r, nil
}

// onRegistrationError judges a claimed host Metal3 cannot register: at once when our credentials
// Secret for it is gone or empty (certain: a live read), a fresh BMC Secret when Metal3 says ours is
// missing, else by the fault policy (bmcfault.go). The request's replacement bound holds for all.
func (st *Step) onRegistrationError(ctx context.Context, c *framework.Cause, s *Slot, f registrationFault, cluster string, taken int64) (verdict, error) {
	id, _ := netbox.ParseIdentity(s.ID)
	detail := f.detail
	creds, err := resolveCredentials(ctx, st.core, st.cfg.CredentialsNamespace, id)
	var problem *credentialsProblem
	switch {
	case errors.As(err, &problem):
		if taken >= int64(st.cfg.Faults.MaxReplacements) {
			return st.faults.boundReached(c, verdict{why: detail + "; its credentials Secret: " + problem.message + "; not quarantined: this request replaced " +
				fmt.Sprint(taken) + " hosts already (BMC_MAX_REPLACEMENTS)"}), nil
		}
		// Certain for this host, but a shared cause (one wrong Secret for a rack, a wrong namespace) when
		// several are found so together: the burst guard holds them too.
		if ok, together := st.guard.admit(c.Now, id, st.faults.failingHosts(c), st.cfg.Faults); !ok {
			return verdict{why: detail + "; its credentials Secret: " + problem.message, held: heldMessage(together, st.cfg.Faults)}, nil
		}
		return verdict{quarantine: true, reason: problem.reason, why: "its credentials Secret: " + problem.message}, nil
	case err != nil:
		return verdict{}, err
	case f.cause == causeOurSecret:
		// Our copy is gone or incomplete (someone deleted it): made again, never the host's fault.
		return verdict{why: detail + "; its BMC Secret is made again"}, hostStepError(s, st.metal3.ensureBMCSecret(ctx, c, id, creds, cluster))
	}
	return st.faults.judge(c, s, f, taken), nil
}

// register creates the BMC Secret and BareMetalHost of a claimed host; creds are read when not at hand.
// Nothing is created for a BMC address the policy refuses (bmcpolicy.go).
func (m metal3) register(ctx context.Context, c *framework.Cause, s *Slot, dev *netbox.Device, cluster string, creds *bmcCredentials) error {
	if m.cfg.BMC.refusal(dev.BMCAddress) != "" {
		return nil // never sent there; registered() says why while the host waits
	}
	if creds == nil {
		var err error
		if creds, err = resolveCredentials(ctx, m.core, m.cfg.CredentialsNamespace, dev.ID); err != nil {
			return hostStepError(s, err)
		}
	}
	if err := m.ensureBMCSecret(ctx, c, dev.ID, creds, cluster); err != nil {
		return hostStepError(s, err)
	}
	return hostStepError(s, m.ensureBareMetalHost(ctx, c, *s, dev, cluster))
}

// registered looks at a claimed host's BareMetalHost (cache), registering it when it is missing (unless
// the BMC address policy refuses its address now); fault: what Metal3 reports of a failed registration.
func (st *Step) registered(ctx context.Context, c *framework.Cause, s *Slot, cluster string) (ready bool, detail string, fault registrationFault, err error) {
	id, _ := netbox.ParseIdentity(s.ID)
	bmh, found, err := c.Cache.Get(external.BareMetalHostGVR, st.cfg.Metal3Namespace, bmhName(id))
	if err != nil {
		return false, "", fault, err
	}
	if !found {
		// The pass after a claim often runs before the cache holds the BareMetalHost the claim created
		// (the freshness gate waits for the request's own writes only): a live read of it costs the API
		// server one GET, where registering again would cost NetBox a device read.
		switch live, err := st.api.Get(ctx, c, external.BareMetalHostGVR, st.cfg.Metal3Namespace, bmhName(id)); {
		case err == nil:
			bmh, found = live, true
		case !framework.IsClass(err, framework.ClassNotFound):
			return false, "", fault, err
		}
	}
	if !found {
		dev, err := st.nb.Claims.GetDevice(ctx, id)
		if err != nil {
			return false, "", fault, inventoryError(err)
		}
		if why := st.cfg.BMC.refusal(dev.BMCAddress); why != "" {
			// Its address changed since the claim: its credentials are not sent there.
			return false, "not registered: " + why, fault, nil
		}
		return false, "registering with Metal3", fault, st.metal3.register(ctx, c, s, dev, cluster, nil)
	}
	if !st.metal3.ownedByRequest(bmh.GetAnnotations(), string(c.Object.GetUID())) {
		return false, "", fault, hostStepError(s, &notOursError{"BareMetalHost", st.cfg.Metal3Namespace + "/" + bmh.GetName()})
	}
	if consumerOf(bmh).taken() {
		return true, "", registrationFault{}, nil // a machine has it: never set aside (consumer.go)
	}
	ready, detail = hostReady(bmh)
	return ready, detail, registrationFaultOf(bmh), nil
}

// ensureBMCSecret creates the Metal3 BMC Secret from the credentials (a live read first: Secrets are not
// cached). An existing one of ours is kept as it is.
func (m metal3) ensureBMCSecret(ctx context.Context, c *framework.Cause, id int32, creds *bmcCredentials, cluster string) error {
	ns, name := m.cfg.Metal3Namespace, bmcSecretName(id)
	secrets := m.core.CoreV1().Secrets(ns)
	existing, err := kube.GetSecret(ctx, c, secrets, ns, name)
	switch {
	case err == nil && m.ownedByRequest(existing.Annotations, string(c.Object.GetUID())):
		return nil
	case err == nil:
		return &notOursError{"Secret", ns + "/" + name}
	case !framework.IsClass(framework.ClassifyAPIError("get", false, err), framework.ClassNotFound):
		return framework.ClassifyAPIError("get Secret "+ns+"/"+name, false, err)
	}
	sec := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: ns,
			Labels:      map[string]string{LabelCluster: cluster, LabelManagedBy: ManagedByValue},
			Annotations: map[string]string{m.cfg.OwnerAnnotation: string(c.Object.GetUID()), AnnotationNetBoxDevice: fmt.Sprint(id)},
		},
		Type: corev1.SecretTypeOpaque,
		Data: map[string][]byte{"username": creds.username, "password": creds.password},
	}
	_, err = secrets.Create(ctx, sec, metav1.CreateOptions{})
	if err != nil {
		cerr := framework.ClassifyAPIError("create Secret "+ns+"/"+name, true, err)
		if framework.IsClass(cerr, framework.ClassConflict) {
			return nil // the next pass reads it back and checks ownership
		}
		return cerr
	}
	c.Normal(eventCreated, fmt.Sprintf("Created BMC Secret %s/%s for host %s", ns, name, netbox.Identity(id)))
	return nil
}

// ensureBareMetalHost creates the host's BareMetalHost, powered off and labelled for the cluster.
func (m metal3) ensureBareMetalHost(ctx context.Context, c *framework.Cause, s Slot, dev *netbox.Device, cluster string) error {
	gvr := external.BareMetalHostGVR
	ns, name := m.cfg.Metal3Namespace, bmhName(dev.ID)
	bmh := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": gvr.GroupVersion().String(), "kind": "BareMetalHost",
		"spec": map[string]any{
			"online":         false,
			"bootMACAddress": dev.BootMAC,
			"bmc":            map[string]any{"address": dev.BMCAddress, "credentialsName": bmcSecretName(dev.ID)},
		},
	}}
	bmh.SetName(name)
	bmh.SetNamespace(ns)
	bmh.SetLabels(map[string]string{LabelCluster: cluster, LabelRole: s.Role, LabelManagedBy: ManagedByValue})
	bmh.SetAnnotations(map[string]string{m.cfg.OwnerAnnotation: string(c.Object.GetUID()), AnnotationNetBoxDevice: fmt.Sprint(dev.ID)})
	_, err := m.api.Create(ctx, gvr, bmh)
	switch {
	case err == nil:
		c.Normal(eventCreated, fmt.Sprintf("Created BareMetalHost %s/%s", ns, name))
		return nil
	case framework.IsClass(err, framework.ClassConflict):
		live, gerr := m.api.Get(ctx, c, gvr, ns, name)
		if gerr != nil {
			return gerr
		}
		if !m.ownedByRequest(live.GetAnnotations(), string(c.Object.GetUID())) {
			return &notOursError{"BareMetalHost", ns + "/" + name}
		}
		return nil
	default:
		return err
	}
}

// ipLiteral is an IPv4 or bracketed/colon-rich IPv6 literal in Metal3's text.
var ipLiteral = regexp.MustCompile(`\b\d{1,3}(\.\d{1,3}){3}\b|\[?[0-9a-fA-F]{0,4}(:[0-9a-fA-F]{0,4}){2,7}\]?`)

// maxMetal3Message bounds one host's Metal3 error in a status message (several may be listed).
const maxMetal3Message = 300

// hostReady: Metal3 reports the host available (its deprecated alias "ready" too) and manageable.
func hostReady(bmh *unstructured.Unstructured) (bool, string) {
	state, _, _ := unstructured.NestedString(bmh.Object, "status", "provisioning", "state")
	op, _, _ := unstructured.NestedString(bmh.Object, "status", "operationalStatus")
	if (state == "available" || state == "ready") && op == "OK" {
		return true, ""
	}
	if op == "error" {
		errType, _, _ := unstructured.NestedString(bmh.Object, "status", "errorType")
		msg, _, _ := unstructured.NestedString(bmh.Object, "status", "errorMessage")
		// Metal3's text is someone else's: it may quote the BMC address (with credentials) or a token, and
		// span lines. It reaches the status as NetBox's errors do.
		// Ironic quotes the BMC's host outside a URL too (urllib3's "host='10.0.0.9'"): any IP literal goes.
		return false, netbox.SanitizeMessage(ipLiteral.ReplaceAllString(fmt.Sprintf("%s: %s", errType, msg), "[address]"), maxMetal3Message)
	}
	if state == "" {
		state = "not registered yet"
	}
	return false, state
}

// Metal3's words for a host it cannot register (baremetal-operator v0.13.2, what
// testdata/reference/crds/metal3.io_baremetalhosts.yaml enumerates): recordActionFailure sets
// operationalStatus "error" with errorType "registration error" when the BMC cannot be reached or refuses
// the credentials while the host registers (the state stays "registering"). "provisioned registration
// error" is the same on a host already provisioned: that one is a cluster's machine by then and is never
// set aside here.
const (
	operationalError  = "error"
	registrationError = "registration error"
)

// inRegistrationError: Metal3 could not register the host (bmcerrors.go tells the causes apart;
// bmcfault.go decides whether that quarantines it).
func inRegistrationError(bmh *unstructured.Unstructured) bool {
	op, _, _ := unstructured.NestedString(bmh.Object, "status", "operationalStatus")
	errType, _, _ := unstructured.NestedString(bmh.Object, "status", "errorType")
	return op == operationalError && errType == registrationError
}

// removal is one look at a host's Metal3 objects during its release.
type removal struct {
	// gone: our BareMetalHost and BMC Secret are both confirmed gone (live reads).
	gone bool
	// detail says what is under way while not gone.
	detail string
	// confirm asks for a prompt re-check: a deleted Secret is not watched, so nothing else would wake
	// the request.
	confirm bool
	// inUse: Metal3 says a machine consumes the host; nothing was deleted (consumer.go).
	inUse bool
}

// deleteMetal3 removes our BareMetalHost, then our BMC Secret, and reports whether both are gone. Objects
// that are not ours are never touched.
func (m metal3) deleteMetal3(ctx context.Context, c *framework.Cause, id int32) (removal, error) {
	uid := string(c.Object.GetUID())
	gvr, ns := external.BareMetalHostGVR, m.cfg.Metal3Namespace
	bmh, err := m.api.Get(ctx, c, gvr, ns, bmhName(id))
	switch {
	case framework.IsClass(err, framework.ClassNotFound):
	case err != nil:
		return removal{}, err
	case m.ownedByRequest(bmh.GetAnnotations(), uid):
		if bmh.GetDeletionTimestamp() == nil {
			if cons := consumerOf(bmh); cons.inUse {
				return removal{detail: m.consumers.inUseDetail(ctx, c, id, cons), inUse: true}, nil // never deleted in use (consumer.go)
			}
			// Exactly the version read: a host a machine took since (CAPM3 sets consumerRef) is refused.
			err := m.api.DeleteVersion(ctx, gvr, ns, bmh.GetName(), bmh.GetUID(), bmh.GetResourceVersion())
			if framework.IsClass(err, framework.ClassConflict) {
				return removal{detail: fmt.Sprintf("%s: BareMetalHost changed while being released; looking again", netbox.Identity(id)), confirm: true}, nil
			}
			if err != nil && !framework.IsClass(err, framework.ClassNotFound) {
				return removal{}, err
			}
			c.Normal(eventDeleted, fmt.Sprintf("Deleted BareMetalHost %s/%s", ns, bmh.GetName()))
		}
		// Metal3 deprovisions and powers off before the object goes (its removal wakes us through the
		// BareMetalHost watch); the Secret stays until then, as Metal3 needs the credentials to do it.
		return removal{detail: fmt.Sprintf("%s: BareMetalHost being removed", netbox.Identity(id))}, nil
	}
	secrets := m.core.CoreV1().Secrets(ns)
	sec, err := kube.GetSecret(ctx, c, secrets, ns, bmcSecretName(id))
	switch cerr := framework.ClassifyAPIError("get Secret "+ns+"/"+bmcSecretName(id), false, err); {
	case err == nil && m.ownedByRequest(sec.Annotations, uid):
		pre := metav1.Preconditions{UID: &sec.UID}
		if err := secrets.Delete(ctx, sec.Name, metav1.DeleteOptions{Preconditions: &pre}); err != nil {
			if cerr := framework.ClassifyAPIError("delete Secret "+ns+"/"+sec.Name, true, err); !framework.IsClass(cerr, framework.ClassNotFound) {
				return removal{}, cerr
			}
		}
		c.Normal(eventDeleted, fmt.Sprintf("Deleted BMC Secret %s/%s", ns, sec.Name))
		return removal{detail: fmt.Sprintf("%s: BMC Secret being removed", netbox.Identity(id)), confirm: true}, nil
	case err == nil, framework.IsClass(cerr, framework.ClassNotFound):
		return removal{gone: true}, nil
	default:
		return removal{}, cerr
	}
}
