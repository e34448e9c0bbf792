from gem_eval.cli import main

main()
