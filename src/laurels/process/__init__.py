"""process"""
