"""kamera_cli.report"""
