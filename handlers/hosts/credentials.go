package hosts

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/o2ims-operator/o2ims-operator/framework"
	"github.com/o2ims-operator/o2ims-operator/netbox"
)

// CredentialsLabel marks the Secret that holds a NetBox device's BMC credentials (one Secret may serve
// several devices).
func CredentialsLabel(id int32) string {
	return fmt.Sprintf("o2ims.provisioning.oran.org/netbox-device-%d", id)
}

// bmcCredentials are a device's BMC username and password. They are never logged.
type bmcCredentials struct {
	username, password []byte
	source             string // namespace/name of the Secret, for messages
}

// credentialsProblem is a deterministic credentials defect: the device is quarantined for it.
type credentialsProblem struct {
	reason  netbox.QuarantineReason
	message string
}

func (p *credentialsProblem) Error() string { return p.message }

// resolveCredentials finds exactly one labelled Secret with a non-empty username and password. It is a
// live read: Secrets are not cached by the operator. An API failure is retried; a missing, ambiguous or
// malformed Secret is a credentialsProblem.
func resolveCredentials(ctx context.Context, cs kubernetes.Interface, namespace string, id int32) (*bmcCredentials, error) {
	label := CredentialsLabel(id)
	list, err := cs.CoreV1().Secrets(namespace).List(ctx, metav1.ListOptions{LabelSelector: label + "=true"})
	if err != nil {
		return nil, framework.ClassifyAPIError("list BMC credentials Secrets in "+namespace, false, err)
	}
	switch len(list.Items) {
	case 0:
		return nil, &credentialsProblem{netbox.ReasonCredentialsMissing,
			fmt.Sprintf("no Secret labelled %s=true in %s", label, namespace)}
	case 1:
	default:
		return nil, &credentialsProblem{netbox.ReasonCredentialsAmbiguous,
			fmt.Sprintf("%d Secrets labelled %s=true in %s; exactly one must hold the device's credentials", len(list.Items), label, namespace)}
	}
	sec := list.Items[0]
	user, pass := sec.Data[corev1.BasicAuthUsernameKey], sec.Data[corev1.BasicAuthPasswordKey]
	if len(user) == 0 || len(pass) == 0 {
		return nil, &credentialsProblem{netbox.ReasonCredentialsInvalid,
			fmt.Sprintf("Secret %s/%s lacks a non-empty username or password", namespace, sec.Name)}
	}
	return &bmcCredentials{username: user, password: pass, source: namespace + "/" + sec.Name}, nil
}
