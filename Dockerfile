# The northpole binary in a small image, for docker-compose.yml (the packer,
# the sleigh and the elves all run it). internal/composecheck runs the same
# go build line as the RUN below, read from this file, so the two cannot drift.

# The builder's Go must be at least go.mod's "go" line, or go build would try
# to download a newer toolchain (composecheck checks this too).
FROM golang:1.26.8-bookworm AS build
WORKDIR /src
# Modules first: this layer stays cached while only the source changes.
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# CGO_ENABLED=0: a static binary, so the runtime image needs no C library
# matching the builder's.
RUN CGO_ENABLED=0 go build -trimpath -o /out/northpole ./cmd/northpole

# Alpine rather than distroless: its busybox wget serves the sleigh's
# healthcheck, and a pinned tag is readable.
FROM alpine:3.24.1
COPY --from=build /out/northpole /usr/local/bin/northpole
# Any unprivileged uid: northpole writes nothing to disk unless --storage-dir
# or --out is given.
USER 65534:65534
ENTRYPOINT ["/usr/local/bin/northpole"]
CMD ["--help"]
