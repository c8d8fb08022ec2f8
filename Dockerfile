# syntax=docker/dockerfile:1
#
# Stages:
#   dev   -- the Go toolchain and air; compose bind-mounts the source and
#            air rebuilds and restarts `chronos serve` on every save.
#   build -- compiles a static binary.
#   prod  -- (default) the binary alone on distroless, as a non-root user.
#
#   docker build -t chronos .                 # production image
#   docker run --rm chronos version

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
RUN --mount=type=cache,target=/root/.cache/go-build \
    go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" -o /out/chronos ./cmd/chronos

FROM gcr.io/distroless/static-debian12:nonroot AS prod
COPY --from=build /out/chronos /usr/local/bin/chronos
USER nonroot:nonroot
EXPOSE 8080
ENTRYPOINT ["/usr/local/bin/chronos"]
CMD ["serve"]
