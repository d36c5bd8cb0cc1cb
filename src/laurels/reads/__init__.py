"""reads"""
