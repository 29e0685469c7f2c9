module github.com/seedaa7df82c/topic/compare

go 1.27

toolchain go1.27.3

require (
	github.com/ThreeDotsLabs/watermill v1.5.1
	github.com/asaskevich/EventBus v0.0.0-20200907212545-49d423059eef
	github.com/cskr/pubsub/v2 v2.0.2
	github.com/seedaa7df82c/topic v0.1.0
)

require (
	github.com/google/uuid v1.6.0 // indirect
	github.com/lithammer/shortuuid/v3 v3.0.7 // indirect
	github.com/oklog/ulid v1.3.1 // indirect
	github.com/pkg/errors v0.9.1 // indirect
)
