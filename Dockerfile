# Herald's images: static binaries on an empty base, run as non-root.
# Build one with:  docker build --target controller -t ghcr.io/herald-lb/controller:v0.1.0 .
#                  docker build --target speaker    -t ghcr.io/herald-lb/speaker:v0.1.0 .
# Machines without a container engine use `make images` (OCI tarballs built
# in Go with go-containerregistry, the same layout).
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ENV CGO_ENABLED=0 GOFLAGS=-buildvcs=false
# grpcnotrace: see GOBUILDFLAGS in the Makefile.
RUN go build -trimpath -tags=grpcnotrace -ldflags="-s -w" -o /out/controller ./controller && \
    go build -trimpath -tags=grpcnotrace -ldflags="-s -w" -o /out/speaker ./speaker

FROM scratch AS controller
COPY --from=build /out/controller /controller
USER 65532:65532
ENTRYPOINT ["/controller"]

FROM scratch AS speaker
COPY --from=build /out/speaker /speaker
USER 65532:65532
ENTRYPOINT ["/speaker"]
