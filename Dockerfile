# syntax=docker/dockerfile:1
# Multi-stage: a static CGO_ENABLED=0 build (hack/build.sh, as the Makefile), then a minimal image that runs
# as uid/gid 65535 like the Python image it replaces.
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
RUN ./hack/build.sh /out/o2ims-operator "${VERSION}"

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/o2ims-operator /o2ims-operator
USER 65535:65535
# northbound API, health/readiness/metrics
EXPOSE 5000 8080
ENTRYPOINT ["/o2ims-operator"]
# The Python image's CMD, as arguments.
CMD ["--all-namespaces", "--liveness=http://0.0.0.0:8080/healthz"]
