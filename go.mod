module github.com/seedaa7df82c/topic

go 1.27

toolchain go1.27.3
