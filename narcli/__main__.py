from narcli.cli import main

main()
