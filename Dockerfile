# syntax=docker/dockerfile:1
# The manglecp server as a small static image that runs as a non-root user.
#   docker build -t manglecp .
#   docker run -p 8080:8080 manglecp
# Several replicas behind nginx with Redis: deploy/compose.yaml.

FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# Static (no cgo), reproducible paths, no symbol tables.
RUN CGO_ENABLED=0 GOOS=linux go build -trimpath -ldflags "-s -w" -o /out/manglecp ./cmd/manglecp

# distroless/static: CA certificates, tzdata, /tmp and a "nonroot" user
# (65532); no shell, no package manager.
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/manglecp /usr/local/bin/manglecp
USER 65532:65532
EXPOSE 8080 9090
ENTRYPOINT ["/usr/local/bin/manglecp"]
# Listen on every interface inside the container (the CLI's default is
# 127.0.0.1); /healthz and /readyz serve the orchestrator's probes.
CMD ["serve", "--addr", "0.0.0.0:8080", "--log-format", "json"]
