from kamera_cli.cli import main

main()
