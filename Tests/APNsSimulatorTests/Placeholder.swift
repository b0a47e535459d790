// Placeholder until the module's first code lands; delete when adding a real file.
