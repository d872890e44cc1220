package hosts

import (
	"context"
	"fmt"

	"go.uber.org/zap"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/o2ims-operator/o2ims-operator/api/external"
	"github.com/o2ims-operator/o2ims-operator/framework"
	"github.com/o2ims-operator/o2ims-operator/handlers/kube"
	"github.com/o2ims-operator/o2ims-operator/netbox"
)

// A host is in use while Metal3 says someone consumes it: deleting its BareMetalHost then would deprovision
// a live node. The words are Metal3's (baremetal-operator v0.13.2, 2b3ea2e1,
// apis/metal3.io/v1alpha1/baremetalhost_types.go: spec.consumerRef, "When it is not empty, the host is
// considered in use"; spec.image and spec.customDeploy start provisioning; ProvisioningState values) and
// CAPM3's (cluster-api-provider-metal3 v1.13.2, e58645d8, baremetal/metal3machine_manager.go: Associate
// sets consumerRef to the Metal3Machine with the image; Delete clears the image, waits while the state is
// preparing/provisioning/provisioned/deprovisioning/powering off before delete/deleting, and clears
// consumerRef only once the host is deprovisioned).
var inUseStates = map[string]bool{
	"preparing": true, "provisioning": true, "provisioned": true, "deprovisioning": true,
	"externally provisioned": true, "powering off before delete": true, "deleting": true,
}

// consumer is what Metal3 says of who uses a host.
type consumer struct {
	inUse bool
	// kind, namespace, name and apiVersion of spec.consumerRef (empty: none).
	kind, namespace, name, apiVersion string
	state                             string
}

// consumerOf reads a BareMetalHost: in use with a consumerRef, an image or custom deploy, or a state
// Metal3 has while an image is written, on the host or being wiped.
func consumerOf(bmh *unstructured.Unstructured) consumer {
	var c consumer
	ref, _, _ := unstructured.NestedMap(bmh.Object, "spec", "consumerRef")
	c.kind, _ = ref["kind"].(string)
	c.name, _ = ref["name"].(string)
	c.namespace, _ = ref["namespace"].(string)
	c.apiVersion, _ = ref["apiVersion"].(string)
	c.state, _, _ = unstructured.NestedString(bmh.Object, "status", "provisioning", "state")
	image, _, _ := unstructured.NestedFieldNoCopy(bmh.Object, "spec", "image")
	deploy, _, _ := unstructured.NestedFieldNoCopy(bmh.Object, "spec", "customDeploy")
	c.inUse = ref != nil || image != nil || deploy != nil || inUseStates[c.state]
	if c.namespace == "" {
		c.namespace = bmh.GetNamespace() // CAPM3 consumes hosts of its Metal3Machine's namespace
	}
	return c
}

// taken: a machine has the host (a consumer, or an image being written or written). Such a host counts as
// available for its request (registerClaimed): Metal3 registered it and the cluster uses it. A host merely
// preparing or deprovisioning does not.
func (c consumer) taken() bool {
	return c.kind != "" || c.state == "provisioning" || c.state == "provisioned" || c.state == "externally provisioned"
}

// consumers tell, from Metal3's BareMetalHosts in namespace (and CAPM3's Metal3Machines), which hosts a
// machine consumes and which Machine that is.
type consumers struct {
	namespace string // Config.Metal3Namespace
	api       kube.Client
}

// consumedInCache: the cache's copy of the host's BareMetalHost says it is in use; movable: it is there
// and not being deleted (only such a host's slot may change places with another, preferUnconsumed).
func (cs consumers) consumedInCache(c *framework.Cause, s Slot) (inUse, movable bool) {
	id, err := netbox.ParseIdentity(s.ID)
	if err != nil || s.Phase != PhaseClaimed || s.Refused != "" {
		return false, false
	}
	bmh, found, err := c.Cache.Get(external.BareMetalHostGVR, cs.namespace, bmhName(id))
	if err != nil || !found || bmh.GetDeletionTimestamp() != nil {
		return false, false
	}
	return consumerOf(bmh).inUse, true
}

// preferUnconsumed: when fewer hosts of a role are asked for, the ones no machine consumes go back first.
// The surplus is whichever hosts the spec no longer asks for (the highest indexes); a surplus host that
// is in use trades places with a requested host of its role that is not, so the free one is released and
// the one in use stays with its cluster. Cluster API chooses which Machine a scale-down deletes: whichever
// host it frees first is then the one released. The cache decides only the order: the release itself
// reads each host live before deleting anything (deleteMetal3).
func (cs consumers) preferUnconsumed(c *framework.Cause, slots []Slot) {
	for i := range slots {
		sur := &slots[i]
		if !sur.Surplus {
			continue
		}
		if inUse, movable := cs.consumedInCache(c, *sur); !inUse || !movable {
			continue
		}
		for j := range slots {
			w := &slots[j]
			if w.Surplus || w.Role != sur.Role {
				continue
			}
			if inUse, movable := cs.consumedInCache(c, *w); inUse || !movable {
				continue
			}
			c.Logger.Info("releasing a host no machine consumes instead of one in use",
				zap.String("released", w.ID), zap.String("kept", sur.ID))
			w.ID, sur.ID = sur.ID, w.ID
			break
		}
	}
}

// inUseDetail says what a host in use waits for, naming the CAPI Machine that consumes it: the owner of
// the Metal3Machine its consumerRef names (found by ownerReferences, as CAPM3 finds it: kind Machine of
// group cluster.x-k8s.io, in the Metal3Machine's namespace). One live read; a Metal3Machine that cannot be
// read leaves the Machine unnamed, never an error.
func (cs consumers) inUseDetail(ctx context.Context, c *framework.Cause, id int32, cons consumer) string {
	host := netbox.Identity(id)
	if cons.kind == "" {
		return fmt.Sprintf("%s: in use, Metal3 reports it %s; released once that is over", host, stateWord(cons.state))
	}
	ref := fmt.Sprintf("%s %s/%s", cons.kind, cons.namespace, cons.name)
	if cons.kind != external.Metal3MachineKind {
		return fmt.Sprintf("%s: in use by %s (%s); released once it no longer consumes it", host, ref, stateWord(cons.state))
	}
	if machine := cs.ownerMachine(ctx, c, cons); machine != "" {
		return fmt.Sprintf("%s: in use by Machine %s/%s (%s, %s); released once Cluster API scales that node away",
			host, cons.namespace, machine, ref, stateWord(cons.state))
	}
	return fmt.Sprintf("%s: in use by %s (%s, its Machine not known); released once Cluster API scales that node away",
		host, ref, stateWord(cons.state))
}

func stateWord(state string) string {
	if state == "" {
		return "no provisioning state yet"
	}
	return state
}

// ownerMachine is the name of the CAPI Machine owning the Metal3Machine cons names ("" when unknown).
func (cs consumers) ownerMachine(ctx context.Context, c *framework.Cause, cons consumer) string {
	version := "v1beta2"
	if gv, err := schema.ParseGroupVersion(cons.apiVersion); err == nil && gv.Group == external.InfrastructureGroup && gv.Version != "" {
		version = gv.Version
	}
	m3m, err := cs.api.Get(ctx, c, external.Metal3MachineGVR(version), cons.namespace, cons.name)
	if err != nil {
		c.Logger.Info("cannot read the Metal3Machine consuming a host", zap.String("metal3Machine", cons.namespace+"/"+cons.name), zap.Error(err))
		return ""
	}
	for _, ref := range m3m.GetOwnerReferences() {
		gv, err := schema.ParseGroupVersion(ref.APIVersion)
		if err == nil && ref.Kind == external.MachineKind && gv.Group == external.ClusterGroup {
			return ref.Name
		}
	}
	return ""
}
