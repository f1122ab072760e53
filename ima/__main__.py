from ima.graph.cli import main

main()
