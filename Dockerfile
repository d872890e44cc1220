# syntax=docker/dockerfile:1
# For registries (docker build / buildx). `make image` builds the same image without a registry: it runs
# the build stage's two scripts on this machine and builds the final stage below as written (hack/image.sh),
# so the final stage must stay FROM scratch with its one COPY from the build stage.
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
# The static binary (as make build), then the root filesystem (hack/rootfs.sh: the one list of its files).
RUN ./hack/build.sh /out/o2ims-operator "${VERSION}" && ./hack/rootfs.sh /rootfs /out/o2ims-operator

FROM scratch
ARG VERSION=dev
# The commit built (hack/image.sh passes git's HEAD; pass --build-arg REVISION=… to docker build).
ARG REVISION=unknown
# The OCI annotations registries and scanners show (opencontainers/image-spec, annotations.md).
LABEL org.opencontainers.image.title=o2ims-operator org.opencontainers.image.version="${VERSION}" org.opencontainers.image.revision="${REVISION}"
LABEL org.opencontainers.image.source=https://github.com/o2ims-operator/o2ims-operator org.opencontainers.image.licenses=Apache-2.0
LABEL org.opencontainers.image.description="O-RAN O2IMS ProvisioningRequest operator for Nephio, with the O2IMS northbound API"
COPY --from=build /rootfs/ /
USER 65535:65535
WORKDIR /
ENV PATH=/usr/local/bin:/usr/bin:/bin
# northbound API, health/readiness/metrics
EXPOSE 5000 8080
# The binary; `kopf` on PATH is a link to it, so the Python image's `kopf run …` works as a command too.
ENTRYPOINT ["/usr/local/bin/o2ims-operator"]
# The Python image's CMD, as arguments.
CMD ["--all-namespaces", "--liveness=http://0.0.0.0:8080/healthz"]
