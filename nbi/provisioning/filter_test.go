package provisioning

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/o2ims-operator/o2ims-operator/nbi/query"
	"github.com/o2ims-operator/o2ims-operator/tests/nbitest"
)

// The filter grammar and its evaluation are tested in package query; this checks that an Info's
// attributes() has the shape the filter's attribute paths expect, member by member.
func TestFilterEvaluationOnAnInfo(t *testing.T) {
	srv := &API{log: nbitest.NopLogger()}
	info := srv.infoOf(nbitest.PRObject("edge-7", map[string]any{
		"name": "Edge Seven", "description": "seventh", "templateName": "nephio-workload-cluster", "templateVersion": "v3.0.0",
		"templateParameters": map[string]any{
			"clusterName": "edge-7", "replicas": int64(3),
			"nodes": []any{map[string]any{"name": "n1", "cpu": int64(4)}, map[string]any{"name": "n2", "cpu": int64(16)}},
		},
	}, map[string]any{
		"provisioningStatus":     map[string]any{"provisioningState": "fulfilled", "provisioningMessage": "Cluster resource created", "provisioningUpdateTime": "2026-11-30T10:00:00Z"},
		"provisionedResourceSet": map[string]any{"oCloudNodeClusterId": "uid-c", "oCloudInfrastructureResourceIds": []any{"host-a", "host-b"}},
	}))
	attrs := info.attributes()
	tp := "provisioningRequestData/templateParameters/"
	for expr, want := range map[string]bool{
		"(eq,provisioningRequestData/provisioningRequestId,edge-7)":            true,
		"(eq,provisioningRequestData/name,Edge Seven)":                         true,
		"(eq,provisioningRequestData/description,seventh)":                     true,
		"(eq,provisioningRequestData/templateName,nephio-workload-cluster)":    true,
		"(eq,provisioningRequestData/templateVersion,v3.0.0)":                  true,
		"(eq,provisioningRequestReference,uid-edge-7)":                         true,
		"(eq,status/provisioningPhase,FULFILLED)":                              true,
		"(cont,status/message,resource)":                                       true,
		"(eq,status/updateTime,2026-11-30T10:00:00Z)":                          true,
		"(eq,provisionedResourceSet/nodeClusterId,uid-c)":                      true,
		"(eq,provisionedResourceSet/infrastructureResourceIds,host-b)":         true,
		"(nin,provisionedResourceSet/infrastructureResourceIds,host-a,host-c)": false,
		"(eq," + tp + "clusterName,edge-7)":                                    true,
		"(gt," + tp + "replicas,10)":                                           false, // numerically, not "3" > "10"
		"(eq," + tp + "nodes/name,n2)":                                         true,  // through an array: any element
		"(gt," + tp + "nodes/cpu,16)":                                          false,
	} {
		f, err := query.ParseFilter(expr)
		require.NoError(t, err, expr)
		require.Equal(t, want, f.Match(attrs), expr)
	}
}
