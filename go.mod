module github.com/rdmablk/rdmablk

go 1.26.8
