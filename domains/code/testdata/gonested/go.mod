module example.com/nest

go 1.22
