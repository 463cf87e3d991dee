# The service image used by docker-compose.yml. Dependencies come from its variables, so
# nothing inside starts Kafka, Redis or the registry (no Java, Maven or redis-server needed).
FROM node:20-bookworm-slim
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund && touch node_modules/.install-stamp
COPY . .
ENV HOST=0.0.0.0 PORT=8080 DATA_DIR=/data
EXPOSE 8080
CMD ["node_modules/.bin/tsx", "service/main.ts"]
