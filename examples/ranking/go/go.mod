module example.com/allfives/ranking

go 1.26.0

require github.com/go-jose/go-jose/v4 v4.1.9
