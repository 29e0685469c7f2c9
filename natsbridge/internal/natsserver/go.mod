// The nats-server the tests of natsbridge run as a process of its own: a
// module apart, so that natsbridge's users do not get nats-server in their
// module graph.
module github.com/seedaa7df82c/topic/natsbridge/internal/natsserver

go 1.27

toolchain go1.27.3

require github.com/nats-io/nats-server/v2 v2.15.2

require (
	github.com/antithesishq/antithesis-sdk-go v0.8.0-default-no-op // indirect
	github.com/google/go-tpm v0.9.8 // indirect
	github.com/klauspost/compress v1.20.3 // indirect
	github.com/minio/highwayhash v1.0.4 // indirect
	github.com/nats-io/jwt/v2 v2.8.2 // indirect
	github.com/nats-io/nkeys v0.4.16 // indirect
	github.com/nats-io/nuid v1.0.1 // indirect
	golang.org/x/crypto v0.58.0 // indirect
	golang.org/x/sys v0.49.0 // indirect
	golang.org/x/time v0.16.0 // indirect
)
