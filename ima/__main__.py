from ima.cli.app import main

main()
