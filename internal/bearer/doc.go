// Package bearer keeps an API token where it belongs: read from a mounted file that may rotate
// (tokenfile.go) and never resent to wherever a redirect points (redirect.go). Both API clients use it:
// the Kubernetes one (framework) and the NetBox one (netbox), so it imports nothing of ours and no
// k8s.io module.
package bearer
