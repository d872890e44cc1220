package nbi

import (
	"errors"
	"io"
	"net/http"

	"github.com/o2ims-operator/o2ims-operator/nbi/query"
)

// ReadBody reads a POST/PUT body: JSON, or YAML since the reference lists application/yaml for every
// body too (query.BodyMedia). A declared length beyond query.MaxBodyBytes is refused before reading; an
// undeclared one stops being read one byte past it.
func ReadBody(w http.ResponseWriter, r *http.Request) (media string, data []byte, err error) {
	mt, err := query.BodyMedia(r.Header.Get("Content-Type"))
	if err != nil {
		return "", nil, err
	}
	if r.ContentLength > query.MaxBodyBytes {
		return "", nil, query.TooLarge()
	}
	if rec, ok := w.(*recorder); ok {
		w = rec.ResponseWriter // MaxBytesReader tells the connection to close through the server's own writer
	}
	data, err = io.ReadAll(http.MaxBytesReader(w, r.Body, query.MaxBodyBytes))
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		return "", nil, query.TooLarge()
	case err != nil:
		return "", nil, NewProblem(http.StatusBadRequest, "the body could not be read").WithCause(err)
	}
	return mt, data, nil
}
