"""leagues"""
