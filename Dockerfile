# Lifeboat as CI systems and Kubernetes CronJobs run it: one static binary on a small base.
#   make image            (docker build -t lifeboat:dev .)
#   docker run --rm -v "$PWD:/work" -w /work lifeboat:dev check --fleet fleet.yaml -o junit
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# The same build as `make build` (CGO_ENABLED=0, -trimpath, -tags disable_grpc_modules,
# -X main.version), stripped; the version comes from `make image` (git describe), since the build
# context's .git may be unusable.
ARG VERSION=dev
RUN CGO_ENABLED=0 go build -trimpath -buildvcs=false -tags disable_grpc_modules -ldflags="-s -w -X main.version=${VERSION}" -o /out/lifeboat ./cmd/lifeboat

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/lifeboat /usr/local/bin/lifeboat
USER nonroot:nonroot
ENTRYPOINT ["/usr/local/bin/lifeboat"]
CMD ["--help"]
