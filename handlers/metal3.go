package handlers

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/o2ims-operator/o2ims-operator/api/external"
	"github.com/o2ims-operator/o2ims-operator/framework"
	"github.com/o2ims-operator/o2ims-operator/netbox"
)

// Labels and annotations on the Metal3 objects we create, so a Metal3 machine template can select the
// cluster's hosts and we can tell our objects from anyone else's.
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

func ownedByRequest(u *unstructured.Unstructured, uid string) bool {
	return u.GetAnnotations()[AnnotationRequestUID] == uid
}

// ensureBMCSecret creates the Metal3 BMC Secret from the credentials (a live read first: Secrets are not
// cached). An existing one of ours is kept as it is.
func (hs *InventoryHosts) ensureBMCSecret(ctx context.Context, c *framework.Cause, id int32, creds *bmcCredentials, cluster string) error {
	ns, name := hs.cfg.Metal3Namespace, bmcSecretName(id)
	secrets := hs.kube.CoreV1().Secrets(ns)
	existing, err := getSecret(ctx, c, secrets, ns, name)
	switch {
	case err == nil && existing.Annotations[AnnotationRequestUID] == string(c.Object.GetUID()):
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
			Annotations: map[string]string{AnnotationRequestUID: string(c.Object.GetUID()), AnnotationNetBoxDevice: fmt.Sprint(id)},
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
	c.Normal(EventCreated, fmt.Sprintf("Created BMC Secret %s/%s for host %s", ns, name, netbox.Identity(id)))
	return nil
}

// ensureBareMetalHost creates the host's BareMetalHost, powered off and labelled for the cluster.
func (hs *InventoryHosts) ensureBareMetalHost(ctx context.Context, c *framework.Cause, s hostSlot, dev *netbox.Device, cluster string) error {
	ns, name := hs.cfg.Metal3Namespace, bmhName(dev.ID)
	bmh := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": external.BareMetalHostGVR.GroupVersion().String(), "kind": external.BareMetalHostKind,
		"spec": map[string]any{
			"online":         false,
			"bootMACAddress": dev.BootMAC,
			"bmc":            map[string]any{"address": dev.BMCAddress, "credentialsName": bmcSecretName(dev.ID)},
		},
	}}
	bmh.SetName(name)
	bmh.SetNamespace(ns)
	bmh.SetLabels(map[string]string{LabelCluster: cluster, LabelRole: s.Role, LabelManagedBy: ManagedByValue})
	bmh.SetAnnotations(map[string]string{AnnotationRequestUID: string(c.Object.GetUID()), AnnotationNetBoxDevice: fmt.Sprint(dev.ID)})
	_, err := hs.k.create(ctx, external.BareMetalHostGVR, bmh)
	switch {
	case err == nil:
		c.Normal(EventCreated, fmt.Sprintf("Created BareMetalHost %s/%s", ns, name))
		return nil
	case framework.IsClass(err, framework.ClassConflict):
		live, gerr := hs.k.get(ctx, c, external.BareMetalHostGVR, ns, name)
		if gerr != nil {
			return gerr
		}
		if !ownedByRequest(live, string(c.Object.GetUID())) {
			return &notOursError{"BareMetalHost", ns + "/" + name}
		}
		return nil
	default:
		return err
	}
}

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
		return false, netbox.SanitizeMessage(fmt.Sprintf("%s: %s", errType, msg), maxMetal3Message)
	}
	if state == "" {
		state = "not registered yet"
	}
	return false, state
}

// deleteMetal3 removes our BareMetalHost, then our BMC Secret, and reports whether both are gone, which it
// confirms with live reads. Objects that are not ours are never touched. confirm asks for a prompt
// re-check: a deleted Secret is not watched, so nothing else would wake the request.
func (hs *InventoryHosts) deleteMetal3(ctx context.Context, c *framework.Cause, id int32) (gone bool, detail string, confirm bool, err error) {
	uid := string(c.Object.GetUID())
	ns := hs.cfg.Metal3Namespace
	bmh, err := hs.k.get(ctx, c, external.BareMetalHostGVR, ns, bmhName(id))
	switch {
	case framework.IsClass(err, framework.ClassNotFound):
	case err != nil:
		return false, "", false, err
	case ownedByRequest(bmh, uid):
		if bmh.GetDeletionTimestamp() == nil {
			if err := hs.k.delete(ctx, external.BareMetalHostGVR, ns, bmh.GetName(), bmh.GetUID()); err != nil && !framework.IsClass(err, framework.ClassNotFound) {
				return false, "", false, err
			}
			c.Normal(EventDeleted, fmt.Sprintf("Deleted BareMetalHost %s/%s", ns, bmh.GetName()))
		}
		// Metal3 deprovisions and powers off before the object goes (its removal wakes us through the
		// BareMetalHost watch); the Secret stays until then, as Metal3 needs the credentials to do it.
		return false, fmt.Sprintf("%s: BareMetalHost being removed", netbox.Identity(id)), false, nil
	}
	secrets := hs.kube.CoreV1().Secrets(ns)
	sec, err := getSecret(ctx, c, secrets, ns, bmcSecretName(id))
	switch cerr := framework.ClassifyAPIError("get Secret "+ns+"/"+bmcSecretName(id), false, err); {
	case err == nil && sec.Annotations[AnnotationRequestUID] == uid:
		pre := metav1.Preconditions{UID: &sec.UID}
		if err := secrets.Delete(ctx, sec.Name, metav1.DeleteOptions{Preconditions: &pre}); err != nil {
			if cerr := framework.ClassifyAPIError("delete Secret "+ns+"/"+sec.Name, true, err); !framework.IsClass(cerr, framework.ClassNotFound) {
				return false, "", false, cerr
			}
		}
		c.Normal(EventDeleted, fmt.Sprintf("Deleted BMC Secret %s/%s", ns, sec.Name))
		return false, fmt.Sprintf("%s: BMC Secret being removed", netbox.Identity(id)), true, nil
	case err == nil, framework.IsClass(cerr, framework.ClassNotFound):
		return true, "", false, nil
	default:
		return false, "", false, cerr
	}
}
