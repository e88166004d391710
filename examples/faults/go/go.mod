module example.com/weirfaults

go 1.21
