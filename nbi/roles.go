package nbi

import (
	"strings"
)

// The O2IMS roles of the northbound API, after openshift-kni/oran-o2ims (config/rbac/
// oran_o2ims_user_roles.yaml and oran_o2ims_oauth_role_bindings.yaml at 70f94e43 and 7fdeb278): each is a
// ClusterRole of non-resource URLs (o2ims-nbi-<role>) bound to the group of the same name as the role
// (o2ims-<role>), shipped in manifests/nbi-auth/objects/o2ims-roles.yaml and checked against this table
// (TestShippedRolesAreTheTable). A Kubernetes caller is bound to the group or the ClusterRole; an OAuth
// caller is in the group through its groups claim or its scope "role:o2ims-<role>". Verbs are the API
// server's for non-resource URLs (the lowercased method), not oran-o2ims' create/update.
const (
	inventoryRoot    = "/o2ims-infrastructureInventory"
	monitoringRoot   = "/o2ims-infrastructureMonitoring"
	provisioningRoot = "/o2ims-infrastructureProvisioning"
	// performanceRoot is the spec's spelling, the canonical one (oran-o2ims has no performance API);
	// nbi/performanceapi authorises its lowercase alias as it.
	performanceRoot = "/O2ims_infrastructurePerformance"
)

// RoleRule grants verbs on paths (a trailing * matches any rest, as in RBAC).
type RoleRule struct{ Verbs, Paths []string }

// Role is one O2IMS role.
type Role struct {
	Name  string // o2ims-<role>: the group bound to it, the scope role:<Name>
	Rules []RoleRule
}

// ClusterRole is the name of the role's ClusterRole.
func (r Role) ClusterRole() string { return "o2ims-nbi-" + strings.TrimPrefix(r.Name, "o2ims-") }

// Roles are the O2IMS roles; the last, o2ims-admin, is all the others together.
func Roles() []Role {
	reader := Role{"o2ims-reader", []RoleRule{
		{[]string{"get"}, []string{inventoryRoot + "/*", monitoringRoot + "/*", provisioningRoot + "/*", performanceRoot + "/*"}},
	}}
	subscriber := Role{"o2ims-subscriber", []RoleRule{
		{[]string{"get", "post"}, []string{inventoryRoot + "/v1/subscriptions", monitoringRoot + "/v1/alarmSubscriptions", performanceRoot + "/v2/performanceSubscriptions"}},
		{[]string{"get", "delete"}, []string{inventoryRoot + "/v1/subscriptions/*", monitoringRoot + "/v1/alarmSubscriptions/*", performanceRoot + "/v2/performanceSubscriptions/*"}},
	}}
	maintainer := Role{"o2ims-maintainer", []RoleRule{
		{[]string{"get", "patch"}, []string{monitoringRoot + "/v1/alarms/*"}},
		{[]string{"get", "put", "patch"}, []string{monitoringRoot + "/v1/alarmServiceConfiguration"}},
		// Measurement jobs load Prometheus and the store: created and deleted by who configures the
		// O-Cloud's services, not by every reader.
		{[]string{"get", "post"}, []string{performanceRoot + "/v2/measurementJobs"}},
		{[]string{"get", "delete"}, []string{performanceRoot + "/v2/measurementJobs/*"}},
		{[]string{"get", "put", "patch"}, []string{performanceRoot + "/v2/performanceServiceConfiguration"}},
	}}
	provisioner := Role{"o2ims-provisioner", []RoleRule{
		{[]string{"get", "post"}, []string{provisioningRoot + "/v1/provisioningRequests"}},
		{[]string{"get", "put", "delete"}, []string{provisioningRoot + "/v1/provisioningRequests/*"}},
	}}
	admin := Role{Name: "o2ims-admin"}
	for _, r := range []Role{reader, subscriber, maintainer, provisioner} {
		admin.Rules = append(admin.Rules, r.Rules...)
	}
	return []Role{reader, subscriber, maintainer, provisioner, admin}
}

// grants reports whether the role allows verb on path.
func (r Role) grants(verb, path string) bool {
	for _, rule := range r.Rules {
		for _, v := range rule.Verbs {
			if v != verb {
				continue
			}
			for _, p := range rule.Paths {
				if prefix, ok := strings.CutSuffix(p, "*"); ok && strings.HasPrefix(path, prefix) || p == path {
					return true
				}
			}
		}
	}
	return false
}

// neededRoles says which O2IMS roles would allow acc, for a 403.
func neededRoles(acc access) string {
	var names []string
	for _, r := range Roles() {
		if r.grants(acc.verb, acc.path) {
			names = append(names, r.Name)
		}
	}
	if len(names) == 0 {
		return "no O2IMS role grants it"
	}
	return "it needs the O2IMS role " + strings.Join(names, " or ")
}
