import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/**', 'dist-package/**', 'node_modules/**', 'coverage/**', '.local/**', 'local/batch/nodetools/**/*.sh', 'cli/dist/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/no-require-imports': 'off',
    },
  },
  {
    // Type-aware rules where a mistake is silent at run time: a promise nobody awaits (its rejection is lost, or an
    // activity's I/O outlives the function that started it) and a promise passed where a callback's result is ignored.
    // The two programs the sources belong to are named rather than found per file (`projectService`): one program per
    // tsconfig instead of a project service opening file after file, measured on 2 cores: 50 CPU-s against 60 for the
    // whole tree. A .ts file neither tsconfig includes fails the lint, naming the file.
    files: ['**/*.ts'],
    languageOptions: { parserOptions: { project: ['./tsconfig.json', './web/tsconfig.json'], tsconfigRootDir: import.meta.dirname } },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
    },
  },
  {
    // Product code (issue 25): a function longer than this does several things and is split into named steps. A
    // function that is one table (a visitor's key handlers, a document literal) says so where it is exempted.
    files: ['shared/**/*.ts', 'functions/**/*.ts', 'orchestrations/**/*.ts', 'cli/**/*.ts'],
    rules: { 'max-lines-per-function': ['error', { max: 100, skipBlankLines: true, skipComments: true }] },
  },
  {
    files: ['**/*.js', '**/*.cjs'],
    languageOptions: { globals: { require: 'readonly', module: 'writable', process: 'readonly', __dirname: 'readonly', console: 'readonly' } },
  },
);
