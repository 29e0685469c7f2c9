module github.com/seedaa7df82c/topic/topicvet

go 1.27

toolchain go1.27.3

require golang.org/x/tools v0.53.0

require (
	golang.org/x/mod v0.43.0 // indirect
	golang.org/x/sync v0.25.0 // indirect
)
