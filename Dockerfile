# syntax=docker/dockerfile:1
# d5list portal image. The build flags below are repeated, and checked, by
# scripts/docker-build-check.sh, which CI runs because it has no Docker engine.

FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# cgo off: modernc SQLite is pure Go, so the binary is static and runs on a
# base image without libc.
ENV CGO_ENABLED=0
RUN go build -trimpath -ldflags "-s -w" -o /out/d5list ./cmd/d5list
RUN mkdir -p /out/data

# distroless/static: no shell and no package manager; it has CA
# certificates, /etc/passwd with the nonroot user (65532), and tzdata.
FROM gcr.io/distroless/static-debian12:nonroot AS final
COPY --from=build /out/d5list /usr/local/bin/d5list
COPY --from=build --chown=65532:65532 /out/data /data
USER 65532:65532
ENV D5LIST_ADDR=0.0.0.0:8080 \
    D5LIST_DATA=/data
VOLUME /data
EXPOSE 8080
# No wget or curl in distroless: the binary asks its own /healthz.
HEALTHCHECK --interval=30s --timeout=5s --start-period=10s --retries=3 \
  CMD ["/usr/local/bin/d5list", "healthcheck", "--url", "http://127.0.0.1:8080/healthz"]
ENTRYPOINT ["/usr/local/bin/d5list"]
CMD ["serve"]
