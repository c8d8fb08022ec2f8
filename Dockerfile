# syntax=docker/dockerfile:1
#
# Stages:
#   dev   -- the Go toolchain and air; compose bind-mounts the source and
#            air rebuilds and restarts `chronos serve` on every save.
#   build -- compiles a static binary, version and commit stamped in.
#   prod  -- (default) the binary alone on distroless, as a non-root user,
#            with a HEALTHCHECK (`chronos health`: GET /readyz).
#
#   docker build -t chronos \
#     --build-arg VERSION="$(git describe --tags --always --dirty)" \
#     --build-arg COMMIT="$(git rev-parse HEAD)" .       # or: make image
#   docker run --rm chronos version
#
# The build does not need .git (it is not copied): VERSION and COMMIT
# arrive as build arguments and are stamped with -ldflags.

ARG GO_VERSION=1.26

FROM golang:${GO_VERSION} AS base
WORKDIR /src
ENV CGO_ENABLED=0
# Modules first, so editing code does not re-download them. They stay in the
# image (no cache mount): the dev stage builds at run time.
COPY go.mod go.sum ./
RUN go mod download

FROM base AS dev
# The bind-mounted repository belongs to the host user, so git (and with it
# Go's VCS stamping) refuses it inside the container: stamp nothing.
ENV GOFLAGS=-buildvcs=false
RUN go install github.com/air-verse/air@v1.67.4
COPY . .
EXPOSE 8080
CMD ["air", "-c", ".air.toml"]

FROM base AS build
COPY . .
ARG VERSION=dev
ARG COMMIT=unknown
RUN --mount=type=cache,target=/root/.cache/go-build \
    go build -trimpath -buildvcs=false \
      -ldflags "-s -w -X main.version=${VERSION} -X main.commit=${COMMIT}" \
      -o /out/chronos ./cmd/chronos

FROM gcr.io/distroless/static-debian12:nonroot AS prod
ARG VERSION=dev
ARG COMMIT=unknown
LABEL org.opencontainers.image.title="chronos" \
      org.opencontainers.image.description="Distributed cron scheduler on Postgres" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${COMMIT}"
COPY --from=build /out/chronos /usr/local/bin/chronos
# Numeric (distroless's "nonroot"), so Kubernetes can check runAsNonRoot.
USER 65532:65532
EXPOSE 8080
# Healthy = ready: the database answers and the LISTEN connection is up.
# The image has no shell or curl; the binary probes itself.
HEALTHCHECK --interval=10s --timeout=5s --start-period=30s --retries=3 \
    CMD ["/usr/local/bin/chronos", "health"]
ENTRYPOINT ["/usr/local/bin/chronos"]
CMD ["serve"]
