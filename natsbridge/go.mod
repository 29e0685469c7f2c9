module github.com/seedaa7df82c/topic/natsbridge

go 1.27

toolchain go1.27.3

require (
	github.com/nats-io/nats.go v1.55.0
	github.com/seedaa7df82c/topic v0.1.0
)

require (
	github.com/klauspost/compress v1.20.3 // indirect
	github.com/nats-io/nkeys v0.4.16 // indirect
	github.com/nats-io/nuid v1.0.1 // indirect
	golang.org/x/crypto v0.58.0 // indirect
	golang.org/x/sys v0.49.0 // indirect
)
