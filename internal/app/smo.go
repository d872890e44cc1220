package app

import (
	"errors"
	"strings"

	"github.com/o2ims-operator/o2ims-operator/nbi/callback"
	"github.com/o2ims-operator/o2ims-operator/nbi/smoclient"
)

// newSMOClient is the O-Cloud's one client towards the SMO (SMO_*): every client of the callback policy
// (each delivery of both notifiers, the callback test) carries its credentials from now on; the
// registration uses it too (registerWithSMO). Its metrics go on the operator's registry.
func (w *wiring) newSMOClient(policyCfg callback.Config) error {
	iw := w.inv
	cfg, err := smoclient.ConfigFromEnv(w.getenv)
	if err != nil {
		return err
	}
	if len(cfg.CAFiles) > 0 && policyCfg.CAFile != "" {
		// SMO_CA_FILE replaces the policy's roots on its transports: CALLBACK_CA_FILE's CAs stay trusted.
		cfg.CAFiles = append(cfg.CAFiles, policyCfg.CAFile)
	}
	if cfg.RegistrationURL != "" && iw.cfg.ServiceURI == "" {
		return errNeedsServiceURI
	}
	if iw.smo, err = smoclient.New(cfg, w.op.Registry(), iw.log.Named("smo")); err != nil {
		return err
	}
	iw.smoCfg = cfg
	iw.policy.WithOutgoing(iw.smo)
	return nil
}

// registerWithSMO, with SMO_REGISTRATION_URL, adds the registrar (a runnable of the leader): it POSTs the
// OCloud Available Notification once the cache is synced and the NBI listens (nbiAddr), and says on
// /readyz while the SMO has not accepted it — a degraded line, never a 503 (the O-Cloud serves either
// way; the SMO being away is the SMO's outage).
func (w *wiring) registerWithSMO() {
	iw, op := w.inv, w.op
	if iw.smoCfg.RegistrationURL == "" {
		return
	}
	id := smoclient.Identity{GlobalCloudID: iw.cfg.GlobalCloudID.String(), OCloudID: iw.cfg.OCloudID.String(), IMSEndpoint: iw.cfg.ServiceURI}
	r := iw.smo.Registrar(smoclient.RegistrationConfig{
		URL:      iw.smoCfg.RegistrationURL,
		Identity: func() smoclient.Identity { return id },
		Ready:    func() bool { return op.Ready() && w.nbiAddr() != "" },
	}, iw.log.Named("smo-registration"))
	w.runnables.smoRegistrar = r
	op.OnDegraded("smo-registration", r.Degraded)
}

var errNeedsServiceURI = errors.New("SMO_REGISTRATION_URL needs OCLOUD_SERVICE_URI: it is the IMS_EP the O-Cloud registers with the SMO")

// checkSMOConfig reads SMO_* before anything connects, so a bad value is the one line of a start-up
// failure; the registration needs the inventory (NETBOX_URL), whose oCloudId it announces.
func checkSMOConfig(getenv func(string) string, inventory bool) error {
	cfg, err := smoclient.ConfigFromEnv(getenv)
	switch {
	case err != nil || cfg.RegistrationURL == "":
		return err
	case !inventory:
		return errors.New("SMO_REGISTRATION_URL needs NETBOX_URL: the O-Cloud's identity (oCloudId) is the inventory's")
	case strings.TrimSpace(getenv("OCLOUD_SERVICE_URI")) == "":
		return errNeedsServiceURI
	}
	return nil
}
