from ima.cli.entry import main

main()
