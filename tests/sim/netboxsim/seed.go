package netboxsim

import (
	"errors"
	"fmt"
	"io"
	"os"

	sigsjson "sigs.k8s.io/json"
)

// SeedData is the JSON document Seed loads:
//
//	{
//	  "version": "4.6.8",
//	  "standard_fields": true,
//	  "custom_fields": [{"name": "gpu_model", "type": "select", "choices": ["a100", "h100"]}],
//	  "devices": [{"name": "edge-1", "status": "staged",
//	               "custom_fields": {"o2ims_managed": true, "gpu_model": "a100"}}]
//	}
type SeedData struct {
	Version string `json:"version,omitempty"`
	// StandardFields adds the four fixed o2ims fields (StandardFields()).
	StandardFields bool          `json:"standard_fields,omitempty"`
	CustomFields   []CustomField `json:"custom_fields,omitempty"`
	// Sites and DeviceTypes are created before the devices that name them (by name / model).
	Sites       []Site       `json:"sites,omitempty"`
	DeviceTypes []DeviceType `json:"device_types,omitempty"`
	Devices     []Device     `json:"devices,omitempty"`
}

// Seed loads custom fields and devices from a JSON document (see SeedData).
// Nothing is loaded when the document is invalid.
func (s *Server) Seed(r io.Reader) error {
	raw, err := io.ReadAll(r)
	if err != nil {
		return fmt.Errorf("netboxsim: read seed: %w", err)
	}
	var data SeedData
	// Strict (unknown and duplicate fields refused); numbers int64 when integers, else float64.
	strict, err := sigsjson.UnmarshalStrict(raw, &data)
	if err == nil {
		err = errors.Join(strict...)
	}
	if err != nil {
		return fmt.Errorf("netboxsim: decode seed: %w", err)
	}
	fields := data.CustomFields
	if data.StandardFields {
		fields = append(StandardFields(), fields...)
	}

	// Validate against a scratch copy first so that a bad seed changes nothing.
	scratch := New(s.opts)
	for _, f := range fields {
		if _, err := scratch.addFieldLocked(f); err != nil {
			return err
		}
	}
	for _, d := range data.Devices {
		if _, err := scratch.addDeviceLocked(d); err != nil {
			return err
		}
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	if data.Version != "" {
		s.version = data.Version
	}
	for _, f := range fields {
		if _, err := s.addFieldLocked(f); err != nil {
			return err
		}
	}
	for _, st := range data.Sites {
		s.siteLocked(st)
	}
	for _, dt := range data.DeviceTypes {
		s.deviceTypeLocked(dt)
	}
	for _, d := range data.Devices {
		if _, err := s.addDeviceLocked(d); err != nil {
			return err
		}
	}
	return nil
}

// SeedFile loads a seed document from a file.
func (s *Server) SeedFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("netboxsim: %w", err)
	}
	defer f.Close()
	return s.Seed(f)
}
