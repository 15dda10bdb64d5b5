// Lint: typescript-eslint's recommended rules over the sources and tests.
import tseslint from "typescript-eslint";

export default tseslint.config(
  { ignores: ["dist/**", "node_modules/**", "*.mjs"] },
  ...tseslint.configs.recommended,
);
